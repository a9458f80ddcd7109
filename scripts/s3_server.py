"""An S3 server (moto) on a loopback port the kernel picks, for with-scaled-services.

It prints its port as its first line of output once it listens, then serves until
SIGTERM or SIGINT. Nobody chooses the port, so no other process on the machine can
take it between the choice and the bind (as it could with a port found free and let go).
"""

from __future__ import annotations

import signal

from moto.server import ThreadedMotoServer


def main() -> None:
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # the server's threads inherit it
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()  # returns once the socket listens
    print(server.get_host_and_port()[1], flush=True)
    signal.sigwait(stop)
    server.stop()


if __name__ == "__main__":
    main()
