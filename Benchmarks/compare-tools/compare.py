"""Harness behind Benchmarks/compare. Builds the corpus with real encoders, serves it on
loopback with loopback-media-server, runs every tool in alternating order for several rounds,
checks that the thumbnails agree, and reports medians and ratios."""
import argparse, json, os, shutil, statistics, subprocess, sys, time
import pyvips

HERE = os.path.dirname(os.path.abspath(__file__))
CORES = os.cpu_count() or 2


def ff(*args):
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args], check=True, timeout=600)


def build_corpus(root):
    mixed = os.path.join(root, "mixed")
    small = os.path.join(root, "small")
    if os.path.exists(os.path.join(root, "done")):
        return mixed, small
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(mixed)
    os.makedirs(small)
    # Distinct images: a different hue for each copy of a size (seeking inside a one-frame
    # source gives no frame at all, so variety comes from filters).
    for k, (w, h) in enumerate([(1280, 800), (2048, 1536), (3000, 2000), (4000, 3000)] * 2):
        ff("-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=1:duration=1", "-vf", f"hue=h={k * 40}",
           "-frames:v", "1", "-update", "1", "-q:v", "4", os.path.join(mixed, f"photo{k}_{w}x{h}.jpg"))
    for k in range(2):
        ff("-f", "lavfi", "-i", f"color=c={['blue', 'green'][k]}@0.6:size=800x600:duration=1,format=rgba", "-frames:v", "1",
           "-update", "1", os.path.join(mixed, f"alpha{k}.png"))
        ff("-f", "lavfi", "-i", "testsrc=size=1024x768:rate=1:duration=1", "-vf", f"hue=h={k * 90}", "-frames:v", "1",
           "-update", "1", os.path.join(mixed, f"opaque{k}.png"))
        ff("-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=1", "-vf",
           f"hue=h={k * 90},split[a][b];[a]palettegen[p];[b][p]paletteuse", os.path.join(mixed, f"anim{k}.gif"))
        ff("-f", "lavfi", "-i", f"sine=frequency={440 + k * 110}:duration=30", "-c:a", "libmp3lame", "-b:a", "128k",
           os.path.join(mixed, f"tone{k}.mp3"))
        ff("-f", "lavfi", "-i", f"sine=frequency={330 + k * 110}:duration=30", "-c:a", "aac", "-b:a", "128k",
           os.path.join(mixed, f"tone{k}.m4a"))
    for name, seconds, rate in [("video40.mp4", 20, "16M"), ("video10.mp4", 10, "8M")]:
        ff("-f", "lavfi", "-i", f"testsrc2=size=1280x720:rate=30:duration={seconds}", "-c:v", "libx264", "-preset", "ultrafast",
           "-b:v", rate, "-maxrate", rate, "-bufsize", rate, "-pix_fmt", "yuv420p", os.path.join(mixed, name))
    for k in range(10):
        ff("-f", "lavfi", "-i", "testsrc2=size=640x480:rate=1:duration=1", "-vf", f"hue=h={k * 36}", "-frames:v", "1",
           "-update", "1", "-q:v", "8", os.path.join(small, f"small{k}.jpg"))
    expected = 20 + 10
    made = len(os.listdir(mixed)) + len(os.listdir(small))
    if made != expected:
        sys.exit(f"corpus: made {made} files, expected {expected}")
    open(os.path.join(root, "done"), "w").close()
    return mixed, small


def build_batch64(root):
    """The 64-file mixed batch the revision comparison runs on: 40 JPEGs of 0.8 to 12 MP, 10 PNGs
    (half with alpha), 5 animated GIFs, 5 MP3s of 30 s and 4 MP4s of 40 s at 720p. The JPEGs carry
    grain, so that they are the size and entropy of phone photos rather than flat test cards.
    Every file differs (a hue per copy), so no layer can answer one from another."""
    batch = os.path.join(root, "batch64")
    if os.path.exists(os.path.join(root, "batch64.done")):
        return batch
    shutil.rmtree(batch, ignore_errors=True)
    os.makedirs(batch)
    sizes = [(1152, 720), (1600, 1200), (2048, 1536), (3000, 2000), (4000, 3000)]
    for k in range(40):
        w, h = sizes[k % len(sizes)]
        ff("-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=1:duration=1", "-vf", f"hue=h={k * 9},noise=alls=10:allf=t",
           "-frames:v", "1", "-update", "1", "-q:v", "3", os.path.join(batch, f"photo{k:02d}_{w}x{h}.jpg"))
    for k in range(10):
        pixel = "format=rgba,colorchannelmixer=aa=0.6" if k % 2 else "format=rgb24"
        ff("-f", "lavfi", "-i", "testsrc=size=1280x960:rate=1:duration=1", "-vf", f"hue=h={k * 36},{pixel}",
           "-frames:v", "1", "-update", "1", os.path.join(batch, f"image{k}.png"))
    for k in range(5):
        ff("-f", "lavfi", "-i", "testsrc=size=480x360:rate=10:duration=2", "-vf",
           f"hue=h={k * 72},split[a][b];[a]palettegen[p];[b][p]paletteuse", os.path.join(batch, f"anim{k}.gif"))
        ff("-f", "lavfi", "-i", f"sine=frequency={330 + k * 110}:duration=30", "-c:a", "libmp3lame", "-b:a", "192k",
           os.path.join(batch, f"tone{k}.mp3"))
    for k in range(4):
        ff("-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=40", "-vf", f"hue=h={k * 90}",
           "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "4M", "-maxrate", "4M", "-bufsize", "4M",
           "-pix_fmt", "yuv420p", os.path.join(batch, f"video{k}.mp4"))
    if len(os.listdir(batch)) != 64:
        sys.exit(f"corpus: made {len(os.listdir(batch))} files in batch64, expected 64")
    open(os.path.join(root, "batch64.done"), "w").close()
    return batch


def build_small300(root):
    """The small batch: 300 distinct JPEGs of 160x120, the size of a typical avatar or icon."""
    small = os.path.join(root, "small300")
    if os.path.exists(os.path.join(root, "small300.done")):
        return small
    shutil.rmtree(small, ignore_errors=True)
    os.makedirs(small)
    # One ffmpeg run writes all 300: a 300-frame clip whose hue turns, one JPEG per frame.
    ff("-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30:duration=10", "-vf", "hue=h=t*36",
       "-q:v", "5", "-start_number", "0", os.path.join(small, "small%03d.jpg"))
    if len(os.listdir(small)) != 300:
        sys.exit(f"corpus: made {len(os.listdir(small))} files in small300, expected 300")
    open(os.path.join(root, "small300.done"), "w").close()
    return small


def start_server(bin_dir, directory):
    process = subprocess.Popen([os.path.join(bin_dir, "loopback-media-server"), directory], stdout=subprocess.PIPE, text=True)
    base = process.stdout.readline().strip()
    return process, base


def process_tree(root):
    """A process and its live descendants, by pid."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
                children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
            except (OSError, ValueError):
                pass
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def tree_pss_kb(root):
    """PSS of a process and all its descendants, in KiB (shared library pages counted once)."""
    total = 0
    for pid in process_tree(root):
        try:
            for line in open(f"/proc/{pid}/smaps_rollup"):
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def timed(command, out_dir, env=None):
    """Wall and CPU time (children included), the peak RSS of the largest process, and the
    peak PSS of the whole process tree (attach-fetch's decoder workers included), sampled
    every 20 ms."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    stats = out_dir + ".time"
    started = time.monotonic()
    process = subprocess.Popen(["/usr/bin/time", "-o", stats, "-f", "%e %U %S %M", *command], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    tree_peak = 0
    while process.poll() is None:
        tree_peak = max(tree_peak, tree_pss_kb(process.pid))
        time.sleep(0.02)
        if time.monotonic() - started > 900:
            process.kill()
    wall = time.monotonic() - started
    _, user, system, rss = open(stats).read().split()[-4:]
    return {"wall": wall, "cpu": float(user) + float(system), "rssMB": int(rss) / 1024, "treeMB": tree_peak / 1024}


def thumbnail_sizes(directory, prefix=""):
    sizes = {}
    for name in os.listdir(directory):
        if ".thumb." in name:
            index = name.split(".thumb.")[0].removeprefix("attachment-")
            image = pyvips.Image.new_from_file(os.path.join(directory, name))
            sizes[index] = (image.width, image.height)
    return sizes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    mixed_dir, small_dir = build_corpus(os.path.join(args.work, "corpus"))
    python = sys.executable
    results = {"machine": {"cores": CORES, "uname": os.uname().release}, "rounds": args.rounds, "scenarios": {}}
    for scenario, directory, names in [
        ("mixed", mixed_dir, sorted(os.listdir(mixed_dir))),
        ("small images", small_dir, [f"small{k % 10}.jpg" for k in range(200)]),
    ]:
        server, base = start_server(args.bin, directory)
        try:
            urls = [f"{base}/media/{name}?n={i}" for i, name in enumerate(names)]
            urls_file = os.path.join(args.work, "urls.txt")
            open(urls_file, "w").write("\n".join(urls) + "\n")
            numbered = os.path.join(args.work, "numbered.txt")
            open(numbered, "w").write("".join(f"{i} {u}\n" for i, u in enumerate(urls)))
            images = [os.path.join(directory, n) for n in names if n.endswith((".jpg", ".png", ".gif"))]
            out = lambda tool: os.path.join(args.work, "out-" + tool.replace(" ", "-"))
            tools = {
                "attach-fetch": lambda o: [os.path.join(args.bin, "attach-fetch"), "--allow-private-network", "--format", "json",
                                           "--input", urls_file, "--out", o, "--deadline", "300", "--timeout", "120"],
                # The same with decoders in-process (isolation none): what the worker processes cost.
                "af in-process": lambda o: [os.path.join(args.bin, "attach-fetch"), "--allow-private-network", "--format", "json",
                                            "--decoder-isolation", "none",
                                            "--input", urls_file, "--out", o, "--deadline", "300", "--timeout", "120"],
                "shell": lambda o: ["sh", "-c", f"xargs -P {CORES} -L 1 {HERE}/baseline.sh {o} < {numbered}"],
                "python": lambda o: [python, os.path.join(HERE, "baseline.py"), urls_file, o],
                # One curl process downloading 8 at a time (what attach-fetch's transfers do), so
                # that the floor carries no process start-up per URL.
                "floor: download": lambda o: ["curl", "-s", "--parallel", "--parallel-max", "8",
                                              *[a for u in urls for a in ("-o", "/dev/null", u)]],
                "floor: thumbnails": lambda o: [python, os.path.join(HERE, "floor_thumbnails.py"), o, *images],
            }
            samples = {name: [] for name in tools}
            order = list(tools)
            for round_index in range(args.rounds):
                rotated = order[round_index % len(order):] + order[:round_index % len(order)]
                for name in rotated:
                    samples[name].append(timed(tools[name](out(name)), out(name)))
            # Nobody wins by doing less: the thumbnails must agree.
            # Only images: attach-fetch also makes video posters, which the baselines do not.
            image_indices = {str(i) for i, n in enumerate(names) if n.endswith((".jpg", ".png", ".gif"))}
            reference = {k: v for k, v in thumbnail_sizes(out("attach-fetch")).items() if k in image_indices}
            check = {}
            for name in ["shell", "python"]:
                other = thumbnail_sizes(out(name))
                check[name] = {"thumbnails": len(other), "mismatches": sum(1 for k, v in reference.items()
                                                                           if k not in other or abs(other[k][0] - v[0]) > 1 or abs(other[k][1] - v[1]) > 1)}
            check["attach-fetch"] = {"thumbnails": len(reference)}
        finally:
            server.terminate()
            server.wait()
        medians = {name: {metric: statistics.median(s[metric] for s in runs) for metric in ["wall", "cpu", "rssMB", "treeMB"]}
                   for name, runs in samples.items()}
        floor = {"wall": medians["floor: download"]["wall"] + medians["floor: thumbnails"]["wall"],
                 "cpu": medians["floor: download"]["cpu"] + medians["floor: thumbnails"]["cpu"],
                 "rssMB": max(medians["floor: download"]["rssMB"], medians["floor: thumbnails"]["rssMB"]),
                 "treeMB": max(medians["floor: download"]["treeMB"], medians["floor: thumbnails"]["treeMB"])}
        medians["floor (sum)"] = floor
        ours = medians["attach-fetch"]
        ratios = {name: ours["wall"] / m["wall"] for name, m in medians.items() if m["wall"] > 0}
        in_process = {name: medians["af in-process"]["wall"] / m["wall"] for name, m in medians.items() if m["wall"] > 0}
        results["scenarios"][scenario] = {"items": len(urls), "medians": medians, "wallRatioOfAttachFetch": ratios,
                                          "wallRatioOfInProcess": in_process,
                                          "thumbnailCheck": check, "samples": samples}
        print(f"\n{scenario}: {len(urls)} URLs, median of {args.rounds} rounds")
        print(f"{'tool':<20}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}{'tree PSS MB':>13}{'attach-fetch / tool':>22}{'in-process / tool':>20}")
        for name, m in medians.items():
            print(f"{name:<20}{m['wall']:>9.3f}{m['cpu']:>9.3f}{m['rssMB']:>13.1f}{m['treeMB']:>13.1f}{ratios.get(name, 0):>22.2f}{in_process.get(name, 0):>20.2f}")
        print(f"thumbnail check: {json.dumps(check)}")
        if scenario == "small images":
            print(f"attach-fetch: {len(urls) / ours['wall']:.0f} attachments/s (process start included)")

    # Memory under load: many large bodies at once, and many 12-megapixel JPEGs.
    mixed_server, base = start_server(args.bin, mixed_dir)
    try:
        memory = {}
        for label, name, count in [("32 x 40 MB videos", "video40.mp4", 32), ("32 x 12 MP JPEGs", "photo3_4000x3000.jpg", 32)]:
            urls_file = os.path.join(args.work, "memory.txt")
            open(urls_file, "w").write("".join(f"{base}/media/{name}?n={i}\n" for i in range(count)))
            o = os.path.join(args.work, "out-memory")
            for isolation in ["processes", "none"]:
                key = f"{label}, isolation {isolation}"
                memory[key] = timed([os.path.join(args.bin, "attach-fetch"), "--allow-private-network", "--format", "json",
                                     "--decoder-isolation", isolation,
                                     "--input", urls_file, "--out", o, "--max-concurrency", "32", "--deadline", "300",
                                     "--timeout", "120"], o)
                print(f"memory, {key}: largest process RSS {memory[key]['rssMB']:.1f} MB, "
                      f"process tree PSS {memory[key]['treeMB']:.1f} MB, wall {memory[key]['wall']:.2f} s")
        results["memory"] = memory
    finally:
        mixed_server.terminate()
        mixed_server.wait()
    os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
    with open(os.path.join(HERE, "..", "results", "compare.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("\nraw numbers: Benchmarks/results/compare.json")


if __name__ == "__main__":
    main()
