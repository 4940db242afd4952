"""The doctor's HTML page in a real browser: Debian's chromium, headless, offline.

Each page (the lab's small result, and a 1,000-node fleet) is written to a temporary file and
screenshot at 1400x1000. The PNG must exist, have that size, and not be one flat colour (it is
decoded here with zlib and struct: the top band of rows, where the header and the findings are).
Host resolution is mapped to nothing, so a page that tried to load anything from outside would show
it missing; the page has no such reference anyway (tests/unit/test_doctor_outputs.py checks that).

chromium is a Debian package that `make setup` installs (Makefile APT_PACKAGES). Without it this
test fails, it is not skipped.
"""

import os
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils import doctor_outputs as outputs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit"))
import test_doctor_outputs as cases  # noqa: E402  (the unit tests' result builders: lab + fleet)

WIDTH, HEIGHT = 1400, 1000
BAND = 300  # rows decoded: the header, the summary chips, the first findings


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed: `make setup` installs it (Debian package chromium in the Makefile's "
                "APT_PACKAGES), or run `apt-get install -y --no-install-recommends chromium`")


def screenshot(page, tmp_path, name):
    html_path = tmp_path / (name + ".html")
    png_path = tmp_path / (name + ".png")
    html_path.write_text(page, encoding="utf-8")
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
               "--user-data-dir=%s" % (tmp_path / (name + "-profile")), "--host-resolver-rules=MAP * ~NOTFOUND",
               "--screenshot=%s" % png_path, "--window-size=%d,%d" % (WIDTH, HEIGHT), html_path.as_uri()]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and png_path.is_file(), "chromium failed (rc %d): %s" % (proc.returncode, proc.stderr[-2000:])
    return png_path


def png_size_and_band(path, rows):
    """(width, height) from the IHDR chunk, and the first ``rows`` rows as lists of pixel tuples."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, colour, _compression, _filter, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format %r" % (header,)
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompressobj().decompress(b"".join(chunks), (stride + 1) * rows)
    previous, band = bytearray(stride), []
    for row in range(min(rows, height)):
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):  # PNG filters 0-4 (RFC 2083 section 6)
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                corner = previous[i - channels] if i >= channels else 0
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        band.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        previous = line
    return (width, height), band


def assert_screenshot_shows_a_page(path):
    size, band = png_size_and_band(path, BAND)
    assert size == (WIDTH, HEIGHT)
    colours = {pixel for row in band for pixel in row}
    assert len(colours) > 20, "the screenshot's top %d rows are %d colour(s): a blank page" % (BAND, len(colours))
    reds = {p for p in colours if p[0] > 150 and p[1] < 90 and p[2] < 90}  # the critical / broken chips
    assert reds, "no red chip in the header: the inline CSS did not apply"


@pytest.mark.parametrize("name, build", [
    ("doctor-small", lambda: outputs.apply_suppressions(cases.lab_result(), cases.KWOK)),
    ("doctor-1000-nodes", lambda: outputs.apply_suppressions(cases.with_fleet(1000), cases.KWOK)),
])
def test_the_html_page_renders_in_chromium(tmp_path, name, build):
    page = outputs.render_html(build(), cases.META)
    path = screenshot(page, tmp_path, name)
    assert_screenshot_shows_a_page(path)
