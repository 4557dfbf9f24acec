"""OSWorld's PDF metrics that are not about text: page counts, and the pictures a PDF holds.

``compare_pdf_images`` compares the images embedded in two PDFs (not renderings of their
pages) by perceptual hash, as OSWorld's does (PyMuPDF to extract, ``imagehash.phash``).
The images are extracted with PyMuPDF when it is installed (AGPL-licensed, so not a
dependency of ours), otherwise with pypdf; the hash is imagehash's arithmetic (grey, 32x32
Lanczos, 2-D DCT-II, the 8x8 lowest frequencies against their median) without the package.
"""

from __future__ import annotations

import importlib
import io
import logging
import math
import operator
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from PIL import Image

log = logging.getLogger(__name__)

HASH_SIZE = 8
_HASH_INPUT = HASH_SIZE * 4  # imagehash's highfreq_factor 4
HASH_TOLERANCE = 5  # OSWorld: images match when their hashes differ in at most 5 bits


def _dct_matrix(n: int) -> np.ndarray:
    """scipy.fftpack's unnormalised DCT-II as a matrix: y[k] = 2 sum x[i] cos(pi k (2i+1) / 2n)."""
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    return 2.0 * np.cos(math.pi * k * (2 * i + 1) / (2 * n))


_DCT = _dct_matrix(_HASH_INPUT)


def _dct2(pixels: np.ndarray) -> np.ndarray:
    """The 2-D DCT-II: scipy.fftpack's, as imagehash calls it (scipy comes with ``formulas``,
    one of our dependencies; its rounding decides ties on flat pictures), else the same sums
    as matrix products."""
    try:  # a module without type information
        fftpack = importlib.import_module("scipy.fftpack")
    except ImportError:
        return np.asarray(_DCT @ pixels.astype(np.float64) @ _DCT.T)
    return np.asarray(fftpack.dct(fftpack.dct(pixels, axis=0), axis=1))


def phash(image: Image.Image) -> np.ndarray:
    """imagehash's ``phash``: 64 booleans, the low-frequency DCT terms above their median."""
    grey = image.convert("L").resize((_HASH_INPUT, _HASH_INPUT), Image.Resampling.LANCZOS)
    low = _dct2(np.asarray(grey))[:HASH_SIZE, :HASH_SIZE]
    return np.asarray(low > np.median(low))


def _pymupdf_images(path: str) -> list[Image.Image] | None:
    try:  # an optional module, without type information
        pymupdf = importlib.import_module("pymupdf")
    except ImportError:
        return None
    images: list[Image.Image] = []
    with pymupdf.open(path) as document:
        for page in document:
            for entry in page.get_images(full=True):
                data = document.extract_image(entry[0])["image"]
                try:  # OSWorld skips an image PIL cannot open
                    images.append(Image.open(io.BytesIO(data)))
                except Exception as err:  # noqa: BLE001
                    log.info("skipping an unreadable image in %s: %s", path, err)
    return images


def _pypdf_images(path: str) -> list[Image.Image]:
    """The images of every page's resources (XObjects, also inside forms; not inline
    images, which PyMuPDF's ``get_images`` does not list either), in page order."""
    from pypdf import PdfReader

    images: list[Image.Image] = []
    for page in PdfReader(path).pages:
        found = page.images
        for index in range(len(found)):
            try:
                item = found[index]
                if item.name.startswith("~"):  # pypdf's names for inline images
                    continue
                picture = item.image
            except Exception as err:  # noqa: BLE001  (an image that cannot be decoded is skipped)
                log.info("skipping an unreadable image in %s: %s", path, err)
                continue
            if picture is not None:
                images.append(picture)
    return images


def pdf_images(path: str) -> list[Image.Image]:
    """The images embedded in a PDF, page by page (raises when it is not a readable PDF)."""
    found = _pymupdf_images(path)
    return _pypdf_images(path) if found is None else found


def compare_pdf_images(pdf1_path: Any, pdf2_path: Any, **_: Any) -> float:
    """The share of the two PDFs' embedded images (paired in order) whose perceptual hashes
    differ in at most 5 bits; 0 when a file is missing or unreadable or the counts differ,
    1 when neither holds an image."""
    if not pdf1_path or not pdf2_path:
        return 0.0
    if not (os.path.exists(pdf1_path) and os.path.exists(pdf2_path)):
        return 0.0
    try:
        images1, images2 = pdf_images(str(pdf1_path)), pdf_images(str(pdf2_path))
    except Exception:  # noqa: BLE001  (OSWorld: an extraction error scores 0)
        return 0.0
    if len(images1) != len(images2):
        return 0.0
    if not images1:
        return 1.0
    matching = 0
    for image1, image2 in zip(images1, images2, strict=True):
        distance = int(np.count_nonzero(phash(image1) != phash(image2)))
        if distance <= HASH_TOLERANCE:
            matching += 1
    return matching / len(images1)


_RELATIONS: dict[str, Callable[[Any, Any], Any]] = {
    name: getattr(operator, name) for name in ("lt", "le", "eq", "ne", "ge", "gt")
}


def check_pdf_pages(pdf_file: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """The PDF's page count stands in ``rules["relation"]`` (an ``operator`` comparison
    name: lt, le, eq, ne, ge, gt) to ``rules["ref_value"]``; no file scores 0, an unreadable
    one raises. OSWorld looks the relation up in ``operator`` with ``getattr``; here only the
    comparisons are accepted and any other name raises ``ValueError`` (OSWorld would raise
    for an unknown name and compute nonsense for a non-comparison one)."""
    from pypdf import PdfReader

    if pdf_file is None:
        return 0.0
    relation = rules["relation"]
    if relation not in _RELATIONS:
        raise ValueError(
            f"check_pdf_pages relation must be one of {sorted(_RELATIONS)}, not {relation!r}"
        )
    pages = len(PdfReader(pdf_file).pages)
    return float(_RELATIONS[relation](pages, rules["ref_value"]))
