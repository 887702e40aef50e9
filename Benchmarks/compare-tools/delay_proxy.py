"""delay_proxy.py: a loopback TCP proxy that adds a round-trip time, for far-origin benchmarks.

Real origins (CDNs) are 20-300 ms away; loopback is ~0.05 ms. This kernel has no netem (no
`tc qdisc ... netem delay`), so the benchmarks put this proxy between the tool under test and
the loopback media server to see how a tool behaves when every request waits for the network.

Model, per accepted connection (one upstream connection each):
  * every chunk read from one side is written to the other side RTT/2 after it was read (a
    timestamped queue per direction: in order, never early, and pipelined: a delay line, not
    stop-and-wait), so a request and its response cost one RTT;
  * the first byte towards the upstream additionally waits for a simulated TCP handshake: it is
    sent no earlier than accept + RTT + RTT/2 (a client that writes at once, as HTTP clients do,
    so pays one extra RTT: a new connection's time to first byte is 2 x RTT);
  * end of stream (half-close) and resets travel the same delay line, after the data before them.
Bandwidth is not limited; at most --window bytes per direction are in flight (backpressure).

Usage: python3 delay_proxy.py --upstream 127.0.0.1:PORT --rtt-ms 100 [--listen-port 0]
Prints one line, http://127.0.0.1:PORT, then serves until SIGTERM/SIGINT, when it prints its
totals to stderr. Python 3.11 standard library only."""
import argparse
import asyncio
import collections
import ipaddress
import signal
import sys

READ_SIZE = 64 * 1024
EOF, RESET = object(), object()


class Stats:
    def __init__(self):
        self.accepted = 0
        self.current = 0
        self.peak = 0
        self.upstream_failures = 0


class DelayLine:
    """One direction: (due time, chunk) in order, with a bound on the bytes held."""

    def __init__(self, window):
        self.items = collections.deque()
        self.held = 0
        self.window = window
        self.readable = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()

    def put(self, due, item):
        if self.items and due < self.items[-1][0]:
            due = self.items[-1][0]  # never overtakes (the first chunk's hold)
        self.items.append((due, item))
        if isinstance(item, bytes):
            self.held += len(item)
            if self.held >= self.window:
                self.room.clear()
        self.readable.set()

    async def get(self):
        while not self.items:
            self.readable.clear()
            await self.readable.wait()
        due, item = self.items.popleft()
        if isinstance(item, bytes):
            self.held -= len(item)
            if self.held < self.window:
                self.room.set()
        return due, item


class Connection:
    def __init__(self, proxy, client_reader, client_writer):
        self.proxy = proxy
        self.client_reader, self.client_writer = client_reader, client_writer
        self.upstream_writer = None

    def abort(self):
        for writer in (self.client_writer, self.upstream_writer):
            if writer is not None:
                writer.transport.abort()

    async def read_side(self, reader, line, first_due=None):
        """Reads chunks into `line`, stamped with when they are due on the other side."""
        loop = asyncio.get_running_loop()
        half = self.proxy.rtt / 2
        try:
            while True:
                await line.room.wait()
                data = await reader.read(READ_SIZE)
                now = loop.time()
                due = now + half
                if first_due is not None:
                    due = max(due, first_due)
                    first_due = None
                line.put(due, data if data else EOF)
                if not data:
                    return
        except (ConnectionError, OSError):
            line.put(loop.time() + half, RESET)

    async def write_side(self, line, writer):
        """Writes what `line` holds to `writer`, each item at its due time. Returns True after
        a clean end of stream, False after a reset (in either direction) or a write error."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                due, item = await line.get()
                while (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                if item is EOF:
                    if writer.can_write_eof():
                        writer.write_eof()
                    await writer.drain()
                    return True
                if item is RESET:
                    return False
                writer.write(item)
                await writer.drain()
        except (ConnectionError, OSError):
            return False

    async def run(self):
        loop = asyncio.get_running_loop()
        accepted = loop.time()
        proxy = self.proxy
        try:
            upstream_reader, self.upstream_writer = await asyncio.open_connection(proxy.upstream_host, proxy.upstream_port)
        except OSError:
            proxy.stats.upstream_failures += 1
            self.abort()  # the client sees a reset, as from an origin that refuses
            return
        toward_upstream, toward_client = DelayLine(proxy.window), DelayLine(proxy.window)
        handshake = accepted + proxy.rtt + proxy.rtt / 2 if proxy.rtt > 0 else None
        tasks = [
            asyncio.create_task(self.read_side(self.client_reader, toward_upstream, handshake)),
            asyncio.create_task(self.read_side(upstream_reader, toward_client)),
        ]
        writers = [
            asyncio.create_task(self.write_side(toward_upstream, self.upstream_writer)),
            asyncio.create_task(self.write_side(toward_client, self.client_writer)),
        ]
        try:
            pending = set(writers)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if not all(task.result() for task in done):
                    self.abort()  # a reset or a failed write ends both directions at once
                    break
        finally:
            for task in tasks + writers:
                task.cancel()
            await asyncio.gather(*tasks, *writers, return_exceptions=True)
            for writer in (self.client_writer, self.upstream_writer):
                writer.close()
            for writer in (self.client_writer, self.upstream_writer):
                try:
                    await writer.wait_closed()
                except (ConnectionError, OSError):
                    pass


class Proxy:
    def __init__(self, upstream_host, upstream_port, rtt_ms, window):
        self.upstream_host, self.upstream_port = upstream_host, upstream_port
        self.rtt = rtt_ms / 1000
        self.window = window
        self.stats = Stats()
        self.connections = {}  # handler task -> Connection

    async def handle(self, reader, writer):
        task = asyncio.current_task()
        connection = self.connections[task] = Connection(self, reader, writer)
        self.stats.accepted += 1
        self.stats.current += 1
        self.stats.peak = max(self.stats.peak, self.stats.current)
        try:
            await connection.run()
        except asyncio.CancelledError:
            pass  # cancelled at shutdown: a task of start_server's must not end cancelled (3.11 logs it)
        finally:
            self.stats.current -= 1
            del self.connections[task]

    async def serve(self, listen_port):
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        server = await asyncio.start_server(self.handle, "127.0.0.1", listen_port, backlog=4096, reuse_address=True)
        port = server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}", flush=True)
        await stop.wait()
        server.close()
        # Connections still open are cut (reset), not flushed: a peer that no longer reads must
        # not keep the proxy alive.
        for task, connection in list(self.connections.items()):
            connection.abort()
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        await server.wait_closed()
        s = self.stats
        print(f"delay_proxy: {s.accepted} connections accepted, peak {s.peak} concurrent, "
              f"{s.upstream_failures} upstream connects failed", file=sys.stderr, flush=True)


def parse_upstream(text):
    """HOST:PORT or [V6]:PORT, the host a loopback address (127.0.0.0/8 or ::1) or localhost."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--upstream {text!r}: expected HOST:PORT")
    host = host.removeprefix("[").removesuffix("]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"--upstream {text!r}: the host must be a loopback IP address") from None
    if not address.is_loopback:
        raise ValueError(f"--upstream {text!r}: {host} is not a loopback address (127.0.0.0/8 or ::1); refused")
    return str(address), int(port)


def main():
    parser = argparse.ArgumentParser(description="Loopback TCP proxy adding a round-trip time.")
    parser.add_argument("--upstream", required=True, help="HOST:PORT on loopback (127.0.0.0/8 or [::1])")
    parser.add_argument("--rtt-ms", type=float, default=0.0, help="round-trip time to add, in ms (0: none)")
    parser.add_argument("--listen-port", type=int, default=0, help="port on 127.0.0.1 (0: an ephemeral one)")
    parser.add_argument("--window", type=int, default=16 * 1024 * 1024,
                        help="bytes in flight per direction before reading pauses (default 16 MiB)")
    args = parser.parse_args()
    try:
        host, port = parse_upstream(args.upstream)
    except ValueError as error:
        print(f"delay_proxy: {error}", file=sys.stderr)
        sys.exit(2)
    if args.rtt_ms < 0:
        print("delay_proxy: --rtt-ms must not be negative", file=sys.stderr)
        sys.exit(2)
    asyncio.run(Proxy(host, port, args.rtt_ms, max(READ_SIZE, args.window)).serve(args.listen_port))


if __name__ == "__main__":
    main()
