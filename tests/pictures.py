"""Pictures for the tests: an image as the PNG bytes an observation carries."""

from __future__ import annotations

import io

from PIL import Image


def png(image: Image.Image) -> bytes:
    """``image`` encoded as PNG."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
