#!/usr/bin/env python3
"""Every module a target imports is among its declared dependencies, and every declared
dependency is imported (docs/architecture.md#targets).

SwiftPM's own `--explicit-target-dependency-import-check error` covers targets of this package
only; this covers products of other packages too. It reads the manifest as SwiftPM evaluates it
(`swift package dump-package`) and each target's Swift sources, and prints every difference.
Exit status 1 when there is one.

Declared but not imported is allowed for executables a target depends on only so that they are
built (a decoder, a test helper program), and for a system library target whose shim target is
what the code imports (the shim's header includes it).

An import inside `#if NAME` or `#elseif NAME`, NAME a compilation condition the target's
settings do not define in this manifest, is not compiled and not counted (EncryptedContent's
`import Crypto` under SWIFT_CRYPTO, which the manifest defines only when asked to)."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Modules of the toolchain and the platform: never declared.
SYSTEM = {"Foundation", "FoundationNetworking", "FoundationEssentials", "Glibc", "Musl", "Darwin",
          "Dispatch", "Synchronization", "XCTest", "Testing", "UserNotifications", "_Concurrency",
          "os", "CryptoKit", "Security", "PackageDescription"}
IMPORT = re.compile(r"^\s*(?:@_exported\s+|@testable\s+|@preconcurrency\s+)*(?:public\s+|package\s+|internal\s+|private\s+|fileprivate\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


def manifest():
    out = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def dependency_name(entry):
    for kind in ("byName", "target", "product"):
        if kind in entry:
            return entry[kind][0]
    raise ValueError(entry)


def target_path(target):
    if target.get("path"):
        return os.path.join(ROOT, target["path"])
    base = "Tests" if target["type"] == "test" else "Sources"
    return os.path.join(ROOT, base, target["name"])


CONDITION = re.compile(r"^\s*#(if|elseif|else|endif)\b\s*(.*?)\s*$")


def compiled_text(text, defines):
    """`text` without the lines under a branch `#if NAME`/`#elseif NAME` whose NAME is not defined."""
    kept, skipping = [], []
    for line in text.split("\n"):
        match = CONDITION.match(line)
        if match:
            kind, condition = match.groups()
            if kind == "if":
                skipping.append(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", condition) is not None and condition not in defines)
            elif kind == "elseif" and skipping:
                skipping[-1] = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", condition) is not None and condition not in defines
            elif kind == "else" and skipping:
                skipping[-1] = False
            elif kind == "endif" and skipping:
                skipping.pop()
            continue
        if not any(skipping):
            kept.append(line)
    return "\n".join(kept)


def defines(target):
    return {setting["kind"]["define"]["_0"] for setting in target.get("settings", [])
            if "define" in setting.get("kind", {})}


def imports(directory, defined=frozenset()):
    found = set()
    for folder, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(folder, name), encoding="utf-8") as source:
                    found.update(IMPORT.findall(compiled_text(source.read(), defined)))
    return found


def main():
    package = manifest()
    targets = {target["name"]: target for target in package["targets"]}
    problems = []
    for target in package["targets"]:
        if target["type"] == "system":
            continue
        declared = {dependency_name(entry) for entry in target.get("dependencies", [])}
        used = imports(target_path(target), defines(target)) - SYSTEM
        # A C target (headers only) imports nothing in Swift.
        if not any(name.endswith(".swift") for _, _, files in os.walk(target_path(target)) for name in files):
            continue
        for module in sorted(used - declared - {target["name"]}):
            problems.append(f"{target['name']}: imports {module}, which it does not declare")
        for module in sorted(declared - used):
            dependency = targets.get(module)
            if dependency is not None and dependency["type"] == "executable":
                continue  # built for it, not imported
            if dependency is not None and dependency["type"] == "system" and any(
                    module in {dependency_name(e) for e in targets[shim].get("dependencies", [])}
                    for shim in declared if shim in targets and shim in used):
                continue  # its shim, which the target imports, includes it
            problems.append(f"{target['name']}: declares {module}, which it does not import")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} difference(s) between Package.swift and the imports", file=sys.stderr)
        return 1
    print("every import is declared and every dependency imported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
