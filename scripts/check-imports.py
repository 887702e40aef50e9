#!/usr/bin/env python3
"""Every module a target imports is among its declared dependencies, and every declared
dependency is imported (docs/architecture.md#targets).

SwiftPM's own `--explicit-target-dependency-import-check error` covers targets of this package
only; this covers products of other packages too. It reads the manifest as SwiftPM evaluates it
(`swift package dump-package`) and each target's Swift sources, and prints every difference.
Exit status 1 when there is one.

Declared but not imported is allowed for executables a target depends on only so that they are
built (a decoder, a test helper program), and for a system library target whose shim target is
what the code imports (the shim's header includes it)."""
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


def imports(directory):
    found = set()
    for folder, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(folder, name), encoding="utf-8") as source:
                    found.update(IMPORT.findall(source.read()))
    return found


def main():
    package = manifest()
    targets = {target["name"]: target for target in package["targets"]}
    problems = []
    for target in package["targets"]:
        if target["type"] == "system":
            continue
        declared = {dependency_name(entry) for entry in target.get("dependencies", [])}
        used = imports(target_path(target)) - SYSTEM
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
