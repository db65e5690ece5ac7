#!/usr/bin/python3
"""An HTTP/2 client that ignores the server's SETTINGS_MAX_CONCURRENT_STREAMS
on purpose (nghttp and curl respect it, so they cannot show what the fake does
to a client that does not): it opens N streams in one write and prints how
many were answered and how many were reset with REFUSED_STREAM.
Only the standard library: TLS with ALPN h2 and hand-made frames.

usage: h2_flood.py CAFILE PORT PATH N
"""
import socket
import ssl
import struct
import sys
import time


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    # HPACK literal header field without indexing, new name, no Huffman.
    name, value = name.encode(), value.encode()
    return bytes([0, len(name)]) + name + bytes([len(value)]) + value


def main():
    cafile, port, path, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    if sock.selected_alpn_protocol() != "h2":
        sys.exit("ALPN did not select h2")
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0)
    block = literal(":method", "GET") + literal(":scheme", "https") + literal(":path", path) + literal(
        ":authority", "localhost")
    for i in range(count):
        out += frame(0x1, 0x5, 1 + 2 * i, block)  # HEADERS, END_STREAM | END_HEADERS
    sock.sendall(out)

    answered, refused, buf = set(), set(), b""
    deadline = time.time() + 10
    sock.settimeout(0.5)
    while len(answered) + len(refused) < count and time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        if not data:
            break
        buf += data
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            ftype, flags, stream = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload, buf = buf[9:9 + length], buf[9 + length:]
            if ftype == 0x4 and not flags & 0x1:
                sock.sendall(frame(0x4, 0x1, 0))  # SETTINGS ACK
            elif ftype == 0x1:
                answered.add(stream)
            elif ftype == 0x3 and int.from_bytes(payload, "big") == 0x7:
                refused.add(stream)
            elif ftype == 0x7:
                sys.exit("GOAWAY error %d" % int.from_bytes(payload[4:8], "big"))
    print("answered=%d refused=%d" % (len(answered), len(refused)))


main()
