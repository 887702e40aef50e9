"""Harness behind Benchmarks/https-compare: 300 small JPEGs over HTTPS from nginx on loopback,
served by two nginx instances that differ only in `http2` on their listen line, fetched by the
release attach-fetch CLI (trusting a test CA made here with openssl), alternating, for several
rounds. Reports median wall time and the connections each run used (nginx's $connection)."""
import argparse, json, os, shutil, socket, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import build_corpus  # noqa: E402  (the same corpus as Benchmarks/compare)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(prefix, root, cert, key, http2):
    os.makedirs(prefix, exist_ok=True)
    port = free_port()
    conf = f"""daemon off; master_process off; worker_processes 1; pid {prefix}/nginx.pid; error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{ log_format c '$connection $server_protocol'; access_log {prefix}/access.log c;
  client_body_temp_path {prefix}/b; proxy_temp_path {prefix}/p; fastcgi_temp_path {prefix}/f; uwsgi_temp_path {prefix}/u; scgi_temp_path {prefix}/s;
  types {{ image/jpeg jpg; }} keepalive_requests 10000;
  server {{ listen 127.0.0.1:{port} ssl{' http2' if http2 else ''}; ssl_certificate {cert}; ssl_certificate_key {key}; root {root}; }} }}"""
    open(f"{prefix}/nginx.conf", "w").write(conf)
    process = subprocess.Popen(["nginx", "-p", prefix, "-c", f"{prefix}/nginx.conf", "-e", f"{prefix}/error.log"])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, port
        except OSError:
            time.sleep(0.025)
    sys.exit("nginx did not start: " + open(f"{prefix}/error.log").read())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    _, small = build_corpus(os.path.join(args.work, "corpus"))
    tls = tempfile.mkdtemp(prefix="af-https-")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-subj", "/CN=bench CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-keyout", f"{tls}/ca.key", "-out", f"{tls}/ca.pem")
    open(f"{tls}/ext", "w").write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=bench", "-keyout", f"{tls}/s.key", "-out", f"{tls}/s.csr")
    openssl("x509", "-req", "-in", f"{tls}/s.csr", "-CA", f"{tls}/ca.pem", "-CAkey", f"{tls}/ca.key", "-CAcreateserial",
            "-sha256", "-days", "2", "-extfile", f"{tls}/ext", "-out", f"{tls}/s.pem")
    servers = {}
    try:
        for name, http2 in [("HTTP/1.1", False), ("HTTP/2", True)]:
            servers[name] = start_nginx(f"{tls}/{'h2' if http2 else 'h1'}", small, f"{tls}/s.pem", f"{tls}/s.key", http2)
        walls = {name: [] for name in servers}
        connections = {name: [] for name in servers}
        for round_index in range(args.rounds):
            order = list(servers) if round_index % 2 == 0 else list(reversed(servers))
            for name in order:
                _, port = servers[name]
                prefix = f"{tls}/{'h2' if name == 'HTTP/2' else 'h1'}"
                open(f"{prefix}/access.log", "w").close()
                urls = f"{tls}/urls.txt"
                open(urls, "w").write("".join(f"https://127.0.0.1:{port}/small{k % 10}.jpg?n={k}\n" for k in range(300)))
                out = f"{tls}/out"
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                started = time.perf_counter()
                run = subprocess.run([os.path.join(args.bin, "attach-fetch"), "--allow-private-network", "--format", "json",
                                      "--ca-file", f"{tls}/ca.pem", "--input", urls, "--out", out, "--deadline", "120"],
                                     stdout=subprocess.PIPE)
                walls[name].append(time.perf_counter() - started)
                ready = sum(1 for a in json.loads(run.stdout)["attachments"] if a["status"] == "ready")
                if ready != 300:
                    sys.exit(f"{name}: only {ready} of 300 ready")
                time.sleep(0.2)  # nginx writes its log line after the response
                lines = open(f"{prefix}/access.log").read().split()
                connections[name].append(len(set(lines[0::2])))
        print(f"300 small JPEGs over HTTPS, attach-fetch release CLI, median of {args.rounds} rounds")
        print(f"{'protocol':<10}{'wall s':>9}{'connections':>13}")
        for name in servers:
            print(f"{name:<10}{statistics.median(walls[name]):>9.3f}{statistics.median(connections[name]):>13.0f}")
        ratio = statistics.median(walls["HTTP/2"]) / statistics.median(walls["HTTP/1.1"])
        print(f"HTTP/2 / HTTP/1.1 (wall): {ratio:.2f}")
        os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
        json.dump({"rounds": args.rounds, "wall": walls, "connections": connections, "ratio": ratio},
                  open(os.path.join(HERE, "..", "results", "https-compare.json"), "w"), indent=1)
    finally:
        for process, _ in servers.values():
            process.kill()
            process.wait()
        shutil.rmtree(tls, ignore_errors=True)


if __name__ == "__main__":
    main()
