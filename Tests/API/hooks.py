"""Schemathesis hooks (SCHEMATHESIS_HOOKS=hooks): every media URL it generates for
`POST /v1/attachments` is replaced by one of the loopback origin's files, so that the run also
reaches ready descriptors; what it generates elsewhere (a push payload's URLs) stays, and the
service's egress proxy refuses it (conftest.LoopbackOnlyProxy)."""
import itertools
import os

import schemathesis

ORIGIN = os.environ["ATTACH_FETCH_TEST_ORIGIN"]
NAMES = itertools.cycle(["photo.jpg", "alpha.png", "tone.mp3", "clip.mp4", "image.webp", "document.pdf", "missing.jpg"])


@schemathesis.hook
def map_body(ctx, body):
    if not isinstance(body, dict):
        return body
    keep_clips_inside_the_unit_square(body)
    if isinstance(body.get("urls"), list):
        body["urls"] = [f"{ORIGIN}/{next(NAMES)}" if isinstance(url, str) else url for url in body["urls"]]
    if isinstance(body.get("requests"), list):
        for item in body["requests"]:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                item["url"] = f"{ORIGIN}/{next(NAMES)}"
    return body


def keep_clips_inside_the_unit_square(body):
    """x + width <= 1 and y + height <= 1: a constraint across fields that JSON Schema cannot
    state (the document says it in words); a generated clip past it is moved inside."""
    items = body.get("requests") if isinstance(body, dict) else None
    for item in items if isinstance(items, list) else []:
        clip = item.get("clip") if isinstance(item, dict) else None
        if not isinstance(clip, dict) or not all(isinstance(clip.get(k), (int, float)) and not isinstance(clip.get(k), bool) for k in ("x", "y", "width", "height")):
            continue
        for start, size in (("x", "width"), ("y", "height")):
            if clip[start] + clip[size] > 1:
                clip[size] = 1 - clip[start]
                if clip[size] <= 0:
                    clip[start], clip[size] = 0, 1
