"""The tesseract engine: the words of an image, read by libtesseract or the ``tesseract`` binary.

It reads in this process through libtesseract's C API when the library loads (the model loads
once per process), else it runs the binary that pytesseract is configured with (its
``tesseract_cmd``); either way on an image
preprocessed the way that reads real UIs best here (REFERENCE section 5, re-measured by
``scripts/bench_grounding.py``): grayscale (coloured regions inverted, so white labels on
coloured buttons read dark on light), upscaled 2x, page segmentation mode 11 (sparse text:
every label on its own), ``OMP_THREAD_LIMIT=1`` in the subprocess environment (tesseract's
OpenMP threads only fight each other on a small machine; ``OcrReader`` runs one process per
core on strips of the page instead). It is called directly rather than through
``pytesseract.image_to_data`` because pytesseract hands tesseract this process's whole
environment and offers no way to set one variable for one call; the image goes in on stdin and
the TSV comes back on stdout, with no temporary files.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import io
import math
import os
import shutil
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from PIL import Image, ImageFilter, ImageOps

from agent_s.grounding.types import Box, GrounderUnavailable


@dataclass(frozen=True)
class TesseractOptions:
    scale: float = 2.0  # upscale factor before reading
    psm: int = 11  # page segmentation mode: 11 = sparse text, 3 = automatic, 6 = one block
    grayscale: bool = True
    # Light text on a coloured background (a blue Send button, a selected row) made dark on
    # light: tesseract reads dark-on-light far better, and reads the inverted forms otherwise not.
    invert_on_colour: bool = True
    language: str = "eng"
    threads: int = 1  # OMP_THREAD_LIMIT for the subprocess (and the library, when it loads)
    timeout_s: float = 60.0
    # Read in this process through libtesseract's C API when the library loads: the engine
    # (its LSTM model and dictionaries) starts once per process, not once per screenshot; the
    # program's start-up is most of a short page's time (about 0.3 s of 0.4 s on galculator).
    in_process: bool = True

    def __post_init__(self) -> None:
        if not 0.5 <= self.scale <= 4:
            raise ValueError(f"OCR scale must be within 0.5..4, not {self.scale}")
        if not 0 <= self.psm <= 13:
            raise ValueError(f"tesseract page segmentation mode must be 0..13, not {self.psm}")

    def describe(self) -> str:
        gray = "grayscale " if self.grayscale else ""
        return f"tesseract {gray}{self.scale:g}x psm {self.psm}"


def _tesseract_command() -> str | None:
    try:
        import pytesseract
    except ImportError:  # pragma: no cover - a declared dependency
        return shutil.which("tesseract")
    configured = str(pytesseract.pytesseract.tesseract_cmd)
    return shutil.which(configured) or (configured if os.path.isfile(configured) else None)


class TesseractEngine:
    """Reads the words of an image with the tesseract binary (see the module docstring)."""

    name = "tesseract"

    def __init__(
        self, options: TesseractOptions | None = None, *, env: Mapping[str, str] | None = None
    ) -> None:
        self.options = options or TesseractOptions()
        self._env = dict(os.environ if env is None else env)
        self._env["OMP_THREAD_LIMIT"] = str(self.options.threads)
        self._command = _tesseract_command()

    @property
    def available(self) -> bool:
        return self._command is not None or (
            self.options.in_process and ctypes.util.find_library("tesseract") is not None
        )

    @property
    def in_process(self) -> bool:
        """Whether pages are read by libtesseract in this process (starting it now if not yet:
        once per process, about half a second)."""
        opts = self.options
        return opts.in_process and _library(opts.language, opts.psm, opts.threads) is not None

    def read(self, image: Image.Image) -> list[tuple[str, Box, float, tuple[int, int, int]]]:
        """(text, box in ``image`` pixels, confidence 0..1, tesseract line id) per word."""
        opts = self.options
        if opts.grayscale:
            prepared = _gray(image, invert_on_colour=opts.invert_on_colour)
        else:
            prepared = image.convert("RGB")
        if opts.scale != 1:
            size = (round(image.width * opts.scale), round(image.height * opts.scale))
            prepared = prepared.resize(size, Image.Resampling.LANCZOS)
        library = _library(opts.language, opts.psm, opts.threads) if opts.in_process else None
        if library is not None:
            return self._parse(library.tsv(prepared), image.size)
        if self._command is None:
            raise GrounderUnavailable(
                "OCR needs the tesseract program (apt-get install tesseract-ocr tesseract-ocr-eng)",
                grounder="ocr",
                reason="tesseract is not installed",
            )
        buffer = io.BytesIO()
        prepared.save(buffer, format="PPM")  # raw PGM/PPM: the fastest format to hand over
        argv = [
            self._command,
            "stdin",
            "stdout",
            "--psm",
            str(opts.psm),
            "-l",
            opts.language,
            "tsv",
        ]
        try:
            done = subprocess.run(
                argv,
                input=buffer.getvalue(),
                capture_output=True,
                env=self._env,
                timeout=opts.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise GrounderUnavailable(
                f"tesseract took over {opts.timeout_s:g} s", grounder="ocr", reason="timeout"
            ) from err
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip()[-300:]
            raise GrounderUnavailable(
                f"tesseract failed (status {done.returncode}): {detail}",
                grounder="ocr",
                reason="tesseract failed",
            )
        return self._parse(done.stdout.decode("utf-8", "replace"), image.size)

    def _parse(
        self, tsv: str, size: tuple[int, int]
    ) -> list[tuple[str, Box, float, tuple[int, int, int]]]:
        scale = self.options.scale
        words = []
        for row in tsv.splitlines():  # the header row (the program's), if any, is no word
            cols = row.split("\t")
            if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
                continue
            left, top, width, height = (int(c) for c in cols[6:10])
            x0 = max(0, math.floor(left / scale))
            y0 = max(0, math.floor(top / scale))
            x1 = min(size[0] - 1, max(x0, math.ceil((left + width) / scale) - 1))
            y1 = min(size[1] - 1, max(y0, math.ceil((top + height) / scale) - 1))
            line = (int(cols[2]), int(cols[3]), int(cols[4]))
            conf = max(0.0, min(1.0, float(cols[10]) / 100))
            words.append((cols[11].strip(), Box.from_corners(x0, y0, x1, y1), conf, line))
        return words


class _Library:
    """One ``TessBaseAPI`` of libtesseract (C API through ctypes), initialised once for a
    language and page segmentation mode; one page at a time (the lock), the GIL released while
    it reads."""

    def __init__(self, lib: ctypes.CDLL, language: str, psm: int) -> None:
        self._lib = lib
        self._lock = threading.Lock()
        self._api = lib.TessBaseAPICreate()
        if not self._api or lib.TessBaseAPIInit3(self._api, None, language.encode()) != 0:
            raise OSError(f"libtesseract could not load the {language!r} model")
        # its diagnostics ("Estimating resolution as ...") are not for the agent's console
        lib.TessBaseAPISetVariable(self._api, b"debug_file", os.devnull.encode())
        lib.TessBaseAPISetPageSegMode(self._api, psm)
        atexit.register(self.close)

    def tsv(self, image: Image.Image) -> str:
        """The TSV (the program's columns) of a grayscale or RGB image."""
        depth = {"L": 1, "RGB": 3}[image.mode]
        data = image.tobytes()
        with self._lock:
            if not self._api:
                raise OSError("libtesseract was closed")
            lib = self._lib
            lib.TessBaseAPISetImage(self._api, data, image.width, image.height, depth,
                                    depth * image.width)  # fmt: skip
            lib.TessBaseAPISetSourceResolution(self._api, 70)  # the program's default
            text = lib.TessBaseAPIGetTsvText(self._api, 0)
            if not text:
                raise OSError("libtesseract read nothing")
            try:
                return ctypes.string_at(text).decode("utf-8", "replace")
            finally:
                lib.TessDeleteText(text)
                lib.TessBaseAPIClear(self._api)

    def close(self) -> None:
        with self._lock:
            if self._api:
                self._lib.TessBaseAPIEnd(self._api)
                self._lib.TessBaseAPIDelete(self._api)
                self._api = None


_LIBRARIES: dict[tuple[str, int], _Library | None] = {}
_LIBRARIES_LOCK = threading.Lock()


def _library(language: str, psm: int, threads: int) -> _Library | None:
    """The process's libtesseract engine for ``language`` and ``psm`` (started on first use),
    or None when the library is not there or does not start (the program is used then)."""
    with _LIBRARIES_LOCK:
        key = (language, psm)
        if key not in _LIBRARIES:
            try:
                _LIBRARIES[key] = _Library(_load(threads), language, psm)
            except (OSError, AttributeError):
                _LIBRARIES[key] = None
        return _LIBRARIES[key]


@cache
def _load(threads: int) -> ctypes.CDLL:
    """libtesseract with its C API's signatures. OpenMP reads ``OMP_THREAD_LIMIT`` once, when
    it loads: it is set for that moment only (this process's environment is left as it was)."""
    name = ctypes.util.find_library("tesseract")
    if name is None:
        raise OSError("libtesseract is not installed")
    before = os.environ.get("OMP_THREAD_LIMIT")
    os.environ["OMP_THREAD_LIMIT"] = str(threads)
    try:
        lib = ctypes.CDLL(name)
    finally:
        if before is None:
            del os.environ["OMP_THREAD_LIMIT"]
        else:
            os.environ["OMP_THREAD_LIMIT"] = before
    api, text, c_int = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures: dict[str, tuple[list[Any], Any]] = {
        "TessBaseAPICreate": ([], api),
        "TessBaseAPIInit3": ([api, text, text], c_int),
        "TessBaseAPISetVariable": ([api, text, text], c_int),
        "TessBaseAPISetPageSegMode": ([api, c_int], None),
        "TessBaseAPISetImage": ([api, text, c_int, c_int, c_int, c_int], None),
        "TessBaseAPISetSourceResolution": ([api, c_int], None),
        "TessBaseAPIGetTsvText": ([api, c_int], ctypes.c_void_p),
        "TessDeleteText": ([ctypes.c_void_p], None),
        "TessBaseAPIClear": ([api], None),
        "TessBaseAPIEnd": ([api], None),
        "TessBaseAPIDelete": ([api], None),
    }
    for function, (arguments, result) in signatures.items():
        getattr(lib, function).argtypes = arguments
        getattr(lib, function).restype = result
    return lib


_COLOURED = 100  # mean saturation (0..255) around a pixel above which it lies on a colour


def _gray(image: Image.Image, *, invert_on_colour: bool) -> Image.Image:
    """Grayscale, with the coloured regions (buttons, selections: saturated around each pixel)
    inverted, so that their white labels come out dark on light like the rest of the screen."""
    gray = ImageOps.grayscale(image)
    if not invert_on_colour:
        return gray
    saturation = image.convert("RGB").convert("HSV").getchannel("S")
    around = saturation.filter(ImageFilter.BoxBlur(4))
    coloured = around.point(lambda v: 255 if v > _COLOURED else 0)
    if coloured.getbbox() is None:
        return gray
    return Image.composite(ImageOps.invert(gray), gray, coloured)
