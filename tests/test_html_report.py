"""The compare report's HTML page: well-formed, self-contained, escaped, with decodable heat maps."""

from __future__ import annotations

import base64
import re
import struct
import zlib
from html.parser import HTMLParser

import numpy as np
import pytest

from customops.comparison.heatmap import (
    DIFF_NEGINF_RGB,
    DIFF_POSINF_RGB,
    DIFF_STOPS,
    HOVER_CELLS,
    MAX_PIXELS,
    MIN_PIXELS,
    NAN_RGB,
    NEGINF_RGB,
    POSINF_RGB,
    VIRIDIS_STOPS,
    colormap,
    encode_png,
    heatmaps,
)
from customops.comparison.html import render

WHITE = np.array([255, 255, 255], dtype=np.uint8)
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class StrictParser(HTMLParser):
    """Records every tag nesting error, and the attributes of every <img>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.areas: list[dict[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))
        if tag == "area":
            self.areas.append(dict(attrs))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.errors.append(f"end tag for void element {tag}")
        elif not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> StrictParser:
    parser = StrictParser()
    parser.feed(page)
    parser.close()
    assert parser.errors == []
    assert parser.stack == []
    return parser


def decode_png(data: bytes) -> np.ndarray:
    """Minimal decoder for what encode_png writes (8-bit RGB, filter 0); checks every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(raw) == height * (1 + 3 * width)
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert not rows[:, 0].any()  # filter type 0 on every row
    return rows[:, 1:].reshape(height, width, 3)


def metrics(shape: list[int], *, mismatches: int = 0, max_abs: float | None = 0.0) -> dict:
    count = int(np.prod(shape))
    return {
        "shape_a": shape,
        "shape_b": shape,
        "dtype_a": "float32",
        "dtype_b": "float32",
        "shape_match": True,
        "dtype_match": True,
        "count": count,
        "mismatches": mismatches,
        "max_abs": max_abs,
        "max_rel": None if max_abs is None else max_abs / 2,
        "max_ulp": None if max_abs is None else int(max_abs * 1e6),
        "nan_match": True,
        "inf_match": True,
        "needed_atol": max_abs,
        "needed_rtol": None,
        "rtol": 1e-5,
        "atol": 1e-6,
        "pass": mismatches == 0,
    }


def node(name: str, op: str, verdict: str, in_model: dict | None, **extra: object) -> dict:
    entry = {
        "node": name,
        "op": op,
        "output": name + "_out",
        "scope": "",
        "in_model": in_model,
        "isolated": {
            "builtin_vs_custom": in_model,
            "builtin_vs_reference": None,
            "custom_vs_reference": in_model,
            "errors": {"builtin": None, "custom": None, "reference": None},
        },
        "origin": "none",
        "attribution": "agree",
        "verdict": verdict,
        "time_us": {"builtin": 10.5, "custom": 250.25},
    }
    entry.update(extra)
    return entry


SHAPE = [1, 3, 20, 30]
RNG = np.random.default_rng(7)
BASE = RNG.standard_normal(SHAPE).astype(np.float32)
SHIFTED = BASE.copy()
SHIFTED[0, 0, 5:9, 10:14] += 0.5  # differs in a 4x4 block of the shown slice
WITH_NAN = BASE.copy()
WITH_NAN[0, 0, 2, 3] = np.nan
WITH_NAN[0, 0, 4, 6] = np.inf
WITH_NAN[0, 0, 6, 9] = -np.inf
STRINGS = np.array([["a", "b"], ["c", "<d>"]], dtype=object)

REPORT = {
    "model": "models/<demo>&.onnx",
    "ort_version": "1.32.0",
    "customops_version": "0.1.0",
    "seed": 0,
    "verdict": "disagree",
    "summary": "DISAGREE: 1 of 5 nodes starts a difference (resize<script>)",
    "tolerances": {"float32": {"rtol": 1e-5, "atol": 1e-6}},
    "sides": {"builtin": {"ok": True, "error": None}, "custom": {"ok": False, "error": "kernel said <no>"}},
    "outputs": [{"name": "y", "metrics": metrics(SHAPE, mismatches=16, max_abs=0.5), "verdict": "disagree"}],
    "nodes": [
        node(
            "resize<script>",
            "Resize",
            "disagree",
            metrics(SHAPE, mismatches=16, max_abs=0.5),
            origin="starts-here",
            attribution="builtin-leaves-spec",
        ),
        node("same", "Pad", "agree", metrics(SHAPE)),
        node(
            "failed",
            "Col2Im",
            "side-failed",
            None,
            attribution="custom-cannot-run",
            isolated={"errors": {"builtin": None, "custom": "boom & <crash>", "reference": None}},
            time_us={"builtin": 3.0, "custom": None},
        ),
        node("text", "Pad", "unknown", None),
        node("nans", "CenterCropPad", "unknown", metrics(SHAPE)),
    ],
    "skipped": [{"node": "cplx", "op": "Resize", "reason": "complex64 <input> cannot be carried"}],
}
TENSORS = {
    "y": (BASE, SHIFTED),
    "resize<script>": (BASE, SHIFTED),
    "same": (BASE, BASE.copy()),
    "failed": (BASE, None),
    "text": (STRINGS, STRINGS.copy()),
    "nans": (WITH_NAN, WITH_NAN.copy()),
}


@pytest.fixture(scope="module")
def page() -> str:
    return render(REPORT, TENSORS)


@pytest.fixture(scope="module")
def parsed(page: str) -> StrictParser:
    return parse(page)


def image(parsed: StrictParser, alt: str) -> np.ndarray:
    found = [img for img in parsed.images if img.get("alt") == alt]
    assert len(found) == 1, [img.get("alt") for img in parsed.images]
    src = found[0]["src"] or ""
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix)
    return decode_png(base64.b64decode(src[len(prefix) :], validate=True))


def test_page_is_well_formed_and_self_contained(page: str, parsed: StrictParser):
    assert page.startswith("<!DOCTYPE html>")
    assert re.search(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]+"', page)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.search(r'(src|href)="(?!data:|#)', page)  # only data: URIs and in-page anchors
    assert "http://" not in page and "https://" not in page


def test_header_shows_verdict_versions_and_tolerances(parsed: StrictParser):
    text = " ".join(parsed.text)
    assert REPORT["summary"] in text
    for needle in ("models/<demo>&.onnx", "1.32.0", "0.1.0", "float32", "1e-05", "1e-06", "kernel said <no>"):
        assert needle in text


def test_text_is_escaped(page: str, parsed: StrictParser):
    assert "resize&lt;script&gt;" in page and "<script>" not in page
    assert "models/&lt;demo&gt;&amp;.onnx" in page
    assert "boom &amp; &lt;crash&gt;" in page
    assert "complex64 &lt;input&gt; cannot be carried" in page
    assert "resize<script>" in " ".join(parsed.text)


def test_verdict_colours(page: str):
    assert re.search(r'<span class="verdict agree">agree</span>', page)
    assert re.search(r'<span class="verdict disagree">disagree</span>', page)
    assert re.search(r'<span class="verdict failed">side-failed</span>', page)
    css = page.split("<style>")[1].split("</style>")[0]
    assert ".agree{background:#dafbe1" in css and ".disagree{background:#ffebe9" in css
    assert ".failed{background:#fff1e5" in css


def test_tables_have_every_column(parsed: StrictParser, page: str):
    text = " ".join(parsed.text)
    for column in (
        "max abs err",
        "max rel err",
        "mismatches",
        "max ULP",
        "attribution",
        "builtin µs",
        "custom µs",
    ):
        assert column in text
    assert "builtin-leaves-spec" in text and "starts here" in text
    assert "250.2" in text  # custom µs
    assert "16 / 1800" in text
    assert "Skipped nodes" in text


def test_headings_and_relative_error_columns_name_their_side():
    """A graph output named "output" (a common export name) is not headed "output output", and each row
    of a detail table names the side its relative error divides by: ours against the built-in side, the
    reference against the reference."""
    report = {**REPORT, "outputs": [{**REPORT["outputs"][0], "name": "output"}]}
    page = render(report, {**TENSORS, "output": TENSORS["y"]})
    text = " ".join(" ".join(parse(page).text).split())
    assert "output output" not in text and "output (graph output)" in text
    assert "the side named second" not in text
    assert "max rel err (÷ |spec side|)" in text
    for row in ("builtin vs custom (÷ |custom|)", "isolated: builtin vs reference (÷ |reference|)"):
        assert row in text
    assert "isolated: custom vs reference (÷ |reference|)" in text


def test_each_side_gets_a_heat_map_and_the_slice_is_named(parsed: StrictParser, page: str):
    for side in ("builtin", "custom"):
        img = image(parsed, f"{side}: resize<script>")
        assert img.shape == (20 * 5, 30 * 5, 3)  # 20x30 slice enlarged x5 to >= 128 px
    assert "slice [0, 0, :, :] of 1×3×20×30" in " ".join(parsed.text)


def test_difference_image_shows_where_values_differ(parsed: StrictParser):
    diff = image(parsed, "A − B: resize<script>")  # B = A + 0.5 in the block: A − B = −0.5, most negative
    block = diff[5 * 5 : 9 * 5, 10 * 5 : 14 * 5]
    assert (block == DIFF_STOPS[0].astype(np.uint8)).all()  # blue end of the diverging scale
    outside = diff.copy()
    outside[5 * 5 : 9 * 5, 10 * 5 : 14 * 5] = WHITE
    assert (outside == WHITE).all()  # zero difference: the white middle


def test_zero_difference_is_a_uniform_white_image():
    diff = decode_png(heatmaps(BASE, BASE.copy())["diff"])
    assert (diff == WHITE).all()


def test_a_node_that_agrees_is_one_line_without_maps(parsed: StrictParser, page: str):
    assert not [img for img in parsed.images if str(img["alt"]).endswith(": same")]
    line = re.search(r'<p class="collapsed" id="node-1">(.*?)</p>', page)
    assert line and "same" in line.group(1) and "Pad" in line.group(1) and "agree" in line.group(1)
    assert 'href="#node-1"' in page  # the nodes table still links to it


def test_nan_and_inf_pixels_get_their_own_colours(parsed: StrictParser):
    for side in ("builtin", "custom"):
        img = image(parsed, f"{side}: nans")
        for (row, col), colour in (((2, 3), NAN_RGB), ((4, 6), POSINF_RGB), ((6, 9), NEGINF_RGB)):
            block = img[row * 5 : row * 5 + 5, col * 5 : col * 5 + 5]
            assert (block == colour).all()
        for colour in (NAN_RGB, POSINF_RGB, NEGINF_RGB):
            assert np.all(img == colour, axis=-1).sum() == 25  # no other pixel has that colour
    # NaN against NaN and inf against the same inf are no difference
    diff = image(parsed, "A − B: nans")
    assert (diff == WHITE).all()


def test_failed_side_and_strings(parsed: StrictParser, page: str):
    assert [img["alt"] for img in parsed.images if str(img["alt"]).endswith(": failed")] == [
        "builtin: failed"
    ]
    text = " ".join(parsed.text)
    assert "custom: no tensor" in text
    assert not [img for img in parsed.images if str(img["alt"]).endswith(": text")]
    assert "&#x27;&lt;d&gt;&#x27;" in page  # string preview, escaped


def test_png_round_trip_and_layout_limits():
    rgb = np.random.default_rng(0).integers(0, 256, (7, 11, 3), dtype=np.uint8)
    assert (decode_png(encode_png(rgb)) == rgb).all()
    small = heatmaps(np.zeros((3, 4), np.float32), np.ones((3, 4), np.float32))
    big = heatmaps(np.arange(1500 * 2000, dtype=np.float32).reshape(1500, 2000), None)
    thin = heatmaps(np.arange(3000, dtype=np.int32).reshape(1, 3000), None)
    assert decode_png(small["a"]).shape[:2] == (3 * 32, 4 * 32)
    assert decode_png(small["diff"]).shape[:2] == (3 * 32, 4 * 32)
    assert max(decode_png(small["b"]).shape[:2]) >= MIN_PIXELS
    h, w = decode_png(big["a"]).shape[:2]
    assert big["b"] is None and big["diff"] is None and big["step"] == 4
    assert max(h, w) <= MAX_PIXELS and (h, w) == (375, 500)
    h, w = decode_png(thin["a"]).shape[:2]
    assert w <= MAX_PIXELS and h >= 16


def test_shared_scale_and_colour_map():
    maps = heatmaps(np.zeros((2, 2), np.float32), np.full((2, 2), 4.0, np.float32))
    assert maps["range"] == (0.0, 4.0) and maps["diff_max"] == 4.0
    assert tuple(decode_png(maps["a"])[0, 0]) == tuple(VIRIDIS_STOPS[0].astype(int))
    assert tuple(decode_png(maps["b"])[0, 0]) == tuple(VIRIDIS_STOPS[-1].astype(int))
    assert tuple(decode_png(maps["diff"])[0, 0]) == tuple(DIFF_STOPS[0].astype(int))  # A − B = −4: blue
    mid = colormap(np.array([0.5]))[0]
    assert tuple(mid) == tuple(VIRIDIS_STOPS[4].astype(int))


def test_shapes_differ_gives_no_difference_image():
    page = render({"outputs": [{"name": "o"}]}, {"o": (np.zeros((1, 4, 4)), np.zeros((1, 5, 5)))})
    parsed = parse(page)
    assert sorted(str(img["alt"]) for img in parsed.images) == ["builtin: o", "custom: o"]
    assert "different shapes" in page


@pytest.mark.parametrize(
    "report",
    [
        {},
        {"verdict": None, "nodes": [{}], "outputs": [{"name": None, "metrics": None}], "skipped": [{}]},
        {"nodes": [{"node": "n", "isolated": None, "time_us": None, "origin": None}], "sides": None},
        {"tolerances": None, "sides": {"builtin": {"ok": None}}, "seed": None},
    ],
)
def test_missing_keys_and_none_values_are_tolerated(report: dict):
    page = render(report, {"n": (None, None)})
    parse(page)
    assert "customops compare" in page


def test_heat_map_budget_prefers_outputs_and_disagreements():
    page = render(REPORT, TENSORS, max_heatmaps=2)
    alts = {str(img["alt"]).split(": ", 1)[1] for img in parse(page).images}
    assert alts == {"y", "resize<script>"}
    assert "image limit" in page


def test_the_slice_shown_is_the_one_with_the_largest_difference():
    a = np.random.default_rng(1).standard_normal((2, 16, 8, 8)).astype(np.float32)
    b = a.copy()
    b[0, 0, 1, 1] += 0.25  # smaller differences elsewhere
    b[1, 2, 3, 3] -= 0.5
    b[1, 5, 6, 2] += 2.0  # the largest
    maps = heatmaps(a, b)
    assert maps["index"] == (1, 5) and maps["slice"] == "[1, 5, :, :]"
    assert maps["where"] == "channel 5 of 16, batch 1 of 2"
    assert maps["diff_range"] == pytest.approx((-2.0, 0.0), abs=1e-6) and maps["diff_max"] == pytest.approx(
        2.0
    )
    page = render({"outputs": [{"name": "o"}]}, {"o": (a, b)})
    text = " ".join(parse(page).text)
    assert (
        "slice [1, 5, :, :] of 2×16×8×8: channel 5 of 16, batch 1 of 2, the one with the largest |A − B|"
        in text
    )
    # a NaN against a number counts as the largest difference; equal tensors show the first slice
    c = np.zeros((3, 4, 4))
    d = c.copy()
    d[0, 0, 0], d[2, 1, 1] = 10.0, np.nan
    assert heatmaps(c, d)["index"] == (2,) and heatmaps(c, d)["non_finite"]["diff"] == (1, 0, 0)
    assert heatmaps(c, c.copy())["index"] == (0,) and heatmaps(c, None)["index"] == (0,)


def test_signed_difference_is_blue_below_white_at_zero_red_above():
    assert tuple(DIFF_STOPS[len(DIFF_STOPS) // 2]) == (255, 255, 255)
    a = np.zeros((2, 3), np.float32)
    b = np.array([[1.0, 0.0, -1.0], [0.5, 0.0, 0.0]], np.float32)  # A − B = −1, 0, +1, −0.5
    b[1, 1], b[1, 2] = np.inf, -np.inf  # A − B = −inf, +inf
    a[1, 0] = np.nan  # NaN against a number
    maps = heatmaps(a, b)
    assert maps["diff_range"] == (-1.0, 1.0) and maps["non_finite"]["diff"] == (1, 1, 1)
    zoom_h, zoom_w = maps["zoom"]
    diff = decode_png(maps["diff"])[::zoom_h, ::zoom_w]
    assert tuple(diff[0, 0]) == tuple(DIFF_STOPS[0].astype(int))  # A < B: blue
    assert tuple(diff[0, 1]) == (255, 255, 255)  # equal: white
    assert tuple(diff[0, 2]) == tuple(DIFF_STOPS[-1].astype(int))  # A > B: red
    assert [tuple(diff[1, j]) for j in range(3)] == [NAN_RGB, DIFF_NEGINF_RGB, DIFF_POSINF_RGB]
    stops = {tuple(s) for s in colormap(np.linspace(0, 1, 4097), DIFF_STOPS)}
    assert not stops & {NAN_RGB, DIFF_POSINF_RGB, DIFF_NEGINF_RGB}  # non-finite colours are not on the scale
    page = render({"outputs": [{"name": "o"}]}, {"o": (a, b)})
    assert "A − B: -1 … 1 on the scale −1 … +1" in page and "1 NaN, 1 +inf, 1 −inf differences" in page


def test_hover_shows_a_b_and_the_difference_at_each_cell(parsed: StrictParser, page: str):
    names = {str(img["usemap"]) for img in parsed.images if str(img["alt"]).endswith(": resize<script>")}
    assert len(names) == 1  # the three maps share one image map
    map_name = names.pop()[1:]
    section = page.split(f'<map name="{map_name}">')[1].split("</map>")[0]
    areas = parse(section).areas
    assert len(areas) == 20 * 30  # one cell per element of a small slice
    (cell,) = [x for x in areas if x["coords"] == "50,25,55,30"]  # row 5, column 10, enlarged x5
    a, b = float(BASE[0, 0, 5, 10]), float(SHIFTED[0, 0, 5, 10])
    assert cell["title"] == f"[0, 0, 5, 10]; A = {a:.8g}; B = {b:.8g}; A − B = {a - b:.8g}"
    assert str(cell["href"]).startswith("#heat-")
    assert (
        len({str(img.get("usemap")) for img in parsed.images}) == len(parsed.images) // 3 + 1
    )  # unique per panel
    assert "<script" not in page and "resize&lt;script&gt;" in page  # names stay escaped around the maps


def test_hover_text_is_escaped():
    page = render({"outputs": [{"name": '"><b>x'}]}, {'"><b>x': (np.zeros((2, 2)), np.ones((2, 2)))})
    parsed = parse(page)
    assert "<b>" not in page and "&quot;&gt;&lt;b&gt;x" in page
    assert len(parsed.areas) == 4 and all("A − B = -1" in str(x["title"]) for x in parsed.areas)


def test_page_size_stays_bounded_for_a_large_tensor():
    rows, cols = np.mgrid[0:2048, 0:3000]
    a = np.broadcast_to(np.sin(rows / 300.0) + np.cos(cols / 400.0), (1, 4, 2048, 3000)).astype(np.float32)
    b = a.copy()
    b[0, 3, 1000, 1500] += 1.0  # the largest difference, in channel 3
    page = render({"outputs": [{"name": "big"}]}, {"big": (a, b)})
    parsed = parse(page)
    assert len(page) < 2_000_000
    assert 0 < len(parsed.areas) <= HOVER_CELLS**2
    for img in parsed.images:
        assert max(decode_png(base64.b64decode(str(img["src"]).split(",", 1)[1])).shape[:2]) <= MAX_PIXELS
    text = " ".join(parsed.text)
    assert "channel 3 of 4, batch 0 of 1" in text and "subsampled 1:6" in text and "48×48 block" in text
    spiked = [x for x in parsed.areas if "at [0, 3, 1000, 1500]" in str(x["title"])]
    assert len(spiked) == 1 and "A − B = -1" in str(spiked[0]["title"])
    assert str(spiked[0]["title"]).startswith("rows 960–1007, columns 1488–1535: largest |A − B| at")
