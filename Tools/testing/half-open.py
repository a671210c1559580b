#!/usr/bin/env python3
"""Holds many half-sent requests open to a loopback server, for ConnectionLimitTests.

    half-open.py PORT SOURCE COUNT

Opens COUNT TCP connections from the loopback address SOURCE to 127.0.0.1:PORT, sends each the
head of a GET /health without its blank line, and prints `connected N`. Then, until it is
killed, prints `closed K` each time the number of those connections the server has closed
changes (K in connection order is not said: only how many).

It runs as a process of its own so that the test process never holds the sockets: with over a
thousand descriptors open, Foundation 6.3.1's Process.run() over-reads in
findMaximumOpenFromProcSelfFD (swift-corelibs-foundation PR 5472), and a test starting a
process at that moment crashed the whole run.
"""
import errno
import resource
import select
import socket
import sys

REQUEST = b"GET /health HTTP/1.1\r\nHost: x\r\n"


def main():
    port, source, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 256)), hard))
    held = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
            s.sendall(REQUEST)
        except OSError as e:
            print(f"half-open: connection {len(held) + 1} from {source}: {e.strerror}", file=sys.stderr)
            s.close()
            continue
        held.append(s)
    print(f"connected {len(held)}", flush=True)
    closed = set()
    said = None
    poller = select.poll()
    for s in held:
        poller.register(s, select.POLLIN)
    by_fd = {s.fileno(): s for s in held}
    while True:
        for fd, _ in poller.poll(200):
            s = by_fd[fd]
            try:
                data = s.recv(1, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError as e:
                if e.errno not in (errno.ECONNRESET, errno.EPIPE):
                    raise
                data = b""
            # Whatever the server sent, this connection is done being watched: end of file
            # is a close; an answer (none is due before the idle timeout) is not.
            poller.unregister(fd)
            if not data:
                closed.add(fd)
        if len(closed) != said:
            said = len(closed)
            print(f"closed {said}", flush=True)


if __name__ == "__main__":
    main()
