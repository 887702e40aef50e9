"""Harness behind Benchmarks/compare-revisions: two builds of attach-fetch run alternately on the
64-file mixed batch (compare.build_batch64), with the floor (curl downloading 8 at a time to
/dev/null, plus vipsthumbnail in 2 processes) measured in the same rounds, and on the small batch
(300 JPEGs of 160x120) as images per second. Prints each build's median wall time and its ratio
to the floor, and the ratio of the two, and writes Benchmarks/results/revisions.json."""
import argparse, json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import build_batch64, build_small300, start_server, timed  # noqa: E402  (one copy of these helpers)


def write_urls(path, base, names):
    # A distinct query per position: no layer may answer one URL from another.
    open(path, "w").write("".join(f"{base}/media/{name}?n={i}\n" for i, name in enumerate(names)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True, help="label=bin-dir of the first build")
    parser.add_argument("--b", required=True, help="label=bin-dir of the second build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    builds = dict(item.split("=", 1) for item in [args.a, args.b])
    labels = list(builds)
    corpus = os.path.join(args.work, "corpus")
    mixed, small = build_batch64(corpus), build_small300(corpus)
    names, small_names = sorted(os.listdir(mixed)), sorted(os.listdir(small))
    first_bin = next(iter(builds.values()))
    server, base = start_server(first_bin, mixed)
    small_server, small_base = start_server(first_bin, small)
    try:
        urls_file, small_urls_file = os.path.join(args.work, "urls.txt"), os.path.join(args.work, "small-urls.txt")
        write_urls(urls_file, base, names)
        write_urls(small_urls_file, small_base, small_names)
        images = [os.path.join(mixed, n) for n in names if n.endswith((".jpg", ".png", ".gif"))]

        def cli(bin_dir, urls):
            return lambda o: [os.path.join(bin_dir, "attach-fetch"), "--allow-private-network", "--format", "json",
                              "--max-concurrency", "8", "--input", urls, "--out", o, "--deadline", "300", "--timeout", "120"]
        tools = {label: cli(bin_dir, urls_file) for label, bin_dir in builds.items()}
        tools.update({f"small: {label}": cli(bin_dir, small_urls_file) for label, bin_dir in builds.items()})
        tools["floor: download"] = lambda o: ["curl", "-s", "--parallel", "--parallel-max", "8",
                                              *[a for n in names for a in ("-o", "/dev/null", f"{base}/media/{n}")]]
        # vipsthumbnail resolves a relative -o against each input's directory, hence the absolute path.
        half = (len(images) + 1) // 2
        tools["floor: thumbnails"] = lambda o: ["sh", "-c", 'printf "%s\\n" "$@" | xargs -P 2 -n ' + str(half)
                                                + ' vipsthumbnail -s 320 -o "$0/%s.thumb.jpg"', os.path.abspath(o), *images]
        samples = {name: [] for name in tools}
        order = list(tools)
        for round_index in range(args.rounds):
            # Alternate who goes first, so that neither build always meets a warm or a cold cache.
            rotated = order[round_index % len(order):] + order[:round_index % len(order)]
            for name in rotated:
                out = os.path.join(args.work, "out-" + name.replace(" ", "-").replace(":", ""))
                samples[name].append(timed(tools[name](out), out)["wall"])
                if name in builds or name.startswith("small: "):
                    made = sum(".thumb." in f for f in os.listdir(out))
                    posters = sum(n.endswith(".mp4") for n in names)
                    expected = len(small_names) if name.startswith("small: ") else len(images) + posters
                    if made < expected:
                        sys.exit(f"{name}: {made} thumbnails, expected {expected}; see {out}")
    finally:
        for process in (server, small_server):
            process.terminate()
            process.wait()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians["floor: download"] + medians["floor: thumbnails"]
    size = sum(os.path.getsize(os.path.join(mixed, n)) for n in names) / 1e6
    print(f"mixed batch: {len(names)} files, {size:.0f} MB, median of {args.rounds} alternated rounds; floor {floor:.3f} s")
    for label in labels:
        print(f"{label:<24} {medians[label]:>8.3f} s   {medians[label] / floor:.2f}x the floor   rounds: "
              + ", ".join(f"{v / floor:.2f}" for v in samples[label]))
    print(f"{labels[1]} / {labels[0]}: {medians[labels[1]] / medians[labels[0]]:.3f}")
    rates = {label: len(small_names) / medians[f"small: {label}"] for label in labels}
    print(f"small batch: {len(small_names)} JPEGs of 160x120")
    for label in labels:
        print(f"{label:<24} {rates[label]:>8.0f} images/s   rounds: "
              + ", ".join(f"{len(small_names) / v:.0f}" for v in samples[f"small: {label}"]))
    os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
    with open(os.path.join(HERE, "..", "results", "revisions.json"), "w") as f:
        json.dump({"builds": builds, "floor": floor, "medians": medians, "smallImagesPerSecond": rates,
                   "samples": samples}, f, indent=2)


if __name__ == "__main__":
    main()
