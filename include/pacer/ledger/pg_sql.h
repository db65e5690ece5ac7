// SQL text shared by every reader of Pacer's PostgreSQL tables (pacer::pg and the console).
#pragma once

// A timestamp column as text in UTC, "2026-11-23T13:40:05Z", so nothing depends on the session's
// time zone. A macro so that it joins string literals at compile time.
#define PACER_UTC(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
