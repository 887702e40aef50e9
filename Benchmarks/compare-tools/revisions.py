"""Harness behind Benchmarks/compare-revisions: two builds of attach-fetch run alternately on the
mixed corpus of Benchmarks/compare, with the floor (curl downloading 8 at a time to /dev/null,
plus libvips thumbnails in one process) measured in the same rounds. Prints each build's median
wall time and its ratio to the floor, and the ratio of the two, and writes
Benchmarks/results/revisions.json."""
import argparse, json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import build_corpus, start_server, timed  # noqa: E402  (one copy of these helpers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True, help="label=bin-dir of the first build")
    parser.add_argument("--b", required=True, help="label=bin-dir of the second build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    builds = dict(item.split("=", 1) for item in [args.a, args.b])
    mixed, _ = build_corpus(os.path.join(args.work, "corpus"))
    names = sorted(os.listdir(mixed))
    first_bin = next(iter(builds.values()))
    server, base = start_server(first_bin, mixed)
    try:
        urls = [f"{base}/media/{name}?n={i}" for i, name in enumerate(names)]
        urls_file = os.path.join(args.work, "urls.txt")
        open(urls_file, "w").write("\n".join(urls) + "\n")
        images = [os.path.join(mixed, n) for n in names if n.endswith((".jpg", ".png", ".gif"))]
        tools = {label: (lambda o, b=bin_dir: [os.path.join(b, "attach-fetch"), "--allow-private-network", "--format", "json",
                                               "--max-concurrency", "8", "--input", urls_file, "--out", o,
                                               "--deadline", "300", "--timeout", "120"])
                 for label, bin_dir in builds.items()}
        tools["floor: download"] = lambda o: ["curl", "-s", "--parallel", "--parallel-max", "8",
                                              *[a for u in urls for a in ("-o", "/dev/null", u)]]
        tools["floor: thumbnails"] = lambda o: [sys.executable, os.path.join(HERE, "floor_thumbnails.py"), o, *images]
        samples = {name: [] for name in tools}
        order = list(tools)
        for round_index in range(args.rounds):
            # Alternate who goes first, so that neither build always meets a warm or a cold cache.
            rotated = order[round_index % len(order):] + order[:round_index % len(order)]
            for name in rotated:
                out = os.path.join(args.work, "out-" + name.replace(" ", "-").replace(":", ""))
                samples[name].append(timed(tools[name](out), out)["wall"])
    finally:
        server.terminate()
        server.wait()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians["floor: download"] + medians["floor: thumbnails"]
    labels = list(builds)
    print(f"mixed batch: {len(names)} files, median of {args.rounds} alternated rounds; floor {floor:.3f} s")
    for label in labels:
        print(f"{label:<24} {medians[label]:>8.3f} s   {medians[label] / floor:.2f}x the floor   rounds: "
              + ", ".join(f"{v / floor:.2f}" for v in samples[label]))
    print(f"{labels[1]} / {labels[0]}: {medians[labels[1]] / medians[labels[0]]:.3f}")
    os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
    with open(os.path.join(HERE, "..", "results", "revisions.json"), "w") as f:
        json.dump({"builds": builds, "floor": floor, "medians": medians, "samples": samples}, f, indent=2)


if __name__ == "__main__":
    main()
