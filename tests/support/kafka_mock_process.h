// pacer-kafka-mock as a child process for integration tests: started on
// loopback with its bootstrap list in a temp file, and killed (and its temp
// directory deleted) on destruction, also when the test failed. It runs with
// --die-with-parent, so a test binary killed by ctest's timeout leaves no mock
// behind (the kernel signals it when the starting thread exits).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace pacer::testing {

struct KafkaMockOptions {
  int brokers = 1;
  std::vector<std::string> topics;  // "NAME:PARTITIONS"
  std::vector<std::string> extra;   // more arguments, passed as they are
  // The pacer-kafka-mock binary; empty: $PACER_KAFKA_MOCK, else the one this
  // file was built beside (PACER_KAFKA_MOCK_BIN).
  std::string binary;
  std::chrono::milliseconds start_limit{10000};
};

// Thread-safety: one owner thread.
class KafkaMockProcess {
 public:
  // Starts the mock and returns once its bootstrap file is written and its
  // stdout line read. Throws std::runtime_error, with the child's stderr, if
  // it exits first or has not published within options.start_limit.
  explicit KafkaMockProcess(KafkaMockOptions options = {});
  ~KafkaMockProcess();
  KafkaMockProcess(const KafkaMockProcess&) = delete;
  KafkaMockProcess& operator=(const KafkaMockProcess&) = delete;

  // "127.0.0.1:P1,..." as read from the bootstrap file.
  const std::string& bootstraps() const { return bootstraps_; }
  const std::string& bootstrapFile() const { return bootstrap_file_; }
  // The line the mock printed on stdout (without the newline).
  const std::string& stdoutLine() const { return stdout_line_; }
  // The temp directory holding the bootstrap file and the child's stderr.
  const std::string& dir() const { return dir_; }
  int pid() const { return pid_; }
  // What the child wrote on stderr so far.
  std::string stderrText() const;

  // Sends SIGTERM and waits up to `limit` for the exit (SIGKILL after it).
  // Returns the exit code, or 128 + signal if a signal ended it; -1 if it was
  // not running.
  int stop(std::chrono::milliseconds limit = std::chrono::milliseconds(5000));

 private:
  void killNow();

  std::string dir_;
  std::string bootstrap_file_;
  std::string bootstraps_;
  std::string stdout_line_;
  int pid_ = -1;
  int stdout_fd_ = -1;  // read end of the child's stdout; EOF when it exits
};

// Runs `argv` (argv[0] looked up in PATH) with `input` on its stdin and
// returns its exit code (128 + signal if a signal ended it); its stdout and
// stderr go to `output`. Killed after `limit` (then the result is 128 + 9).
int runProcess(const std::vector<std::string>& argv, std::string& output, const std::string& input = "",
               std::chrono::milliseconds limit = std::chrono::milliseconds(30000));

// The pacer-kafka-mock binary KafkaMockOptions::binary defaults to.
std::string defaultKafkaMockBinary();

}  // namespace pacer::testing
