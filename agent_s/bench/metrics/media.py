"""OSWorld's audio and video metrics: ``compare_audios``, ``compare_videos`` and
``check_mp3_meta`` (our own code, written from OSWorld's behaviour).

``compare_audios`` is OSWorld's MFCC + DTW similarity: each file is read as librosa reads it
(libsndfile through soundfile, mono by averaging the channels, resampled to 22050 Hz with
soxr's high quality, as librosa's default), its 20 MFCCs computed as librosa computes them
(2048-point periodic Hann STFT, hop 512, zero-padded centred frames, 128 Slaney mel bands,
power in dB with an 80 dB floor, orthonormal DCT-II), each coefficient scaled by its
largest magnitude, and the two sequences aligned by FastDTW (radius 1, cosine distance) as
the ``fastdtw`` package aligns them. The score is ``exp(-distance / path length)``: 1.0 for
the same sound. A file that cannot be read counts as empty: two empty files are similar
(1.0), one is not (0.0), as in OSWorld.

``compare_videos`` reads frames with OpenCV and compares each pair's perceptual hash (the
DCT hash of ``imagehash.phash``); more than ``threshold`` frames that differ by more than
``threshold`` bits, or videos of different lengths (within ``max_frames_to_check``), score 0.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_s.bench.metrics.table import match_value_to_rule

SAMPLE_RATE = 22050
N_FFT = 2048
HOP = 512
N_MELS = 128
N_MFCC = 20
TOP_DB = 80.0
AMIN = 1e-10

Floats = NDArray[np.floating[Any]]


# -- audio -------------------------------------------------------------------------------------


def load_audio(path: str) -> Floats:
    """Samples of ``path`` as librosa.load gives them: float32 mono at 22050 Hz."""
    soundfile = importlib.import_module("soundfile")  # dependencies without type information
    soxr = importlib.import_module("soxr")
    data, rate = soundfile.read(path, dtype="float32", always_2d=False)
    samples: Floats = np.asarray(data, dtype=np.float32)
    if samples.ndim > 1:
        samples = np.mean(samples, axis=1).astype(np.float32)
    if rate != SAMPLE_RATE and samples.shape[0]:
        length = int(math.ceil(samples.shape[0] * (float(SAMPLE_RATE) / rate)))
        resampled = np.asarray(soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ"))
        fitted = np.zeros(length, dtype=np.float32)
        fitted[: min(length, resampled.shape[0])] = resampled[:length]
        samples = fitted
    return samples


def _hz_to_mel(hz: Floats) -> Floats:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    f_sp = 200.0 / 3
    min_log_mel = 1000.0 / f_sp
    logstep = math.log(6.4) / 27.0
    mels = hz / f_sp
    log_part = hz >= 1000.0
    mels[log_part] = min_log_mel + np.log(hz[log_part] / 1000.0) / logstep
    return mels


def _mel_to_hz(mels: Floats) -> Floats:
    f_sp = 200.0 / 3
    min_log_mel = 1000.0 / f_sp
    logstep = math.log(6.4) / 27.0
    hz = f_sp * mels
    log_part = mels >= min_log_mel
    hz[log_part] = 1000.0 * np.exp(logstep * (mels[log_part] - min_log_mel))
    return hz


def mel_filters(rate: int = SAMPLE_RATE) -> Floats:
    """Triangular mel filters with Slaney's area normalisation (librosa.filters.mel)."""
    fft_freqs = np.fft.rfftfreq(n=N_FFT, d=1.0 / rate)
    edges = np.array([0.0, rate / 2.0])
    low, high = _hz_to_mel(edges.copy())
    mel_freqs = _mel_to_hz(np.linspace(low, high, N_MELS + 2))
    widths = np.diff(mel_freqs)
    ramps = np.subtract.outer(mel_freqs, fft_freqs)
    weights = np.zeros((N_MELS, fft_freqs.shape[0]))
    for i in range(N_MELS):
        lower = -ramps[i] / widths[i]
        upper = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_freqs[2 : N_MELS + 2] - mel_freqs[:N_MELS]))[:, None]
    filters: Floats = weights.astype(np.float32)
    return filters


def mfcc(samples: Floats, rate: int = SAMPLE_RATE) -> Floats:
    """20 MFCCs per 512-sample hop, shape (20, frames), as librosa.feature.mfcc."""
    fft = importlib.import_module("scipy.fft")
    padded = np.pad(samples, N_FFT // 2, mode="constant")
    count = 1 + (padded.shape[0] - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(
        padded,
        shape=(count, N_FFT),
        strides=(padded.strides[0] * HOP, padded.strides[0]),
        writeable=False,
    )
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)
    spectrum = np.fft.rfft(window * frames, axis=1).astype(np.complex64).T
    power = (np.abs(spectrum) ** 2).astype(np.float32)
    mel = (mel_filters(rate) @ power).astype(np.float32)
    db = (10.0 * np.log10(np.maximum(AMIN, mel))).astype(np.float32)
    db = np.maximum(db, db.max() - TOP_DB)
    coefficients: Floats = np.asarray(fft.dct(db, axis=0, type=2, norm="ortho"))[:N_MFCC]
    return coefficients


def _scale_rows(features: Floats) -> Floats:
    """Each row over its largest magnitude (librosa.util.normalize, axis 1); a row of
    (near) zeros stays as it is."""
    length = np.max(np.abs(features).astype(np.float64), axis=1, keepdims=True)
    length[length < np.finfo(features.dtype).tiny] = 1.0
    scaled: Floats = (features / length).astype(features.dtype)
    return scaled


def _cosine_row(u: Floats, vs: Floats) -> Floats:
    """scipy's cosine distance between ``u`` and each row of ``vs``, clipped to [0, 2]."""
    uv = vs @ u
    uu = float(u @ u)
    vv = np.einsum("ij,ij->i", vs, vs)
    with np.errstate(divide="ignore", invalid="ignore"):
        distances: Floats = np.abs(np.clip(1.0 - uv / np.sqrt(uu * vv), 0.0, 2.0))
    return distances


def _dtw(
    x: Floats, y: Floats, window: list[tuple[int, int]] | None
) -> tuple[float, list[tuple[int, int]]]:
    """DTW over ``window`` (0-based cells; all when ``None``), with fastdtw's choice among
    equal costs: from above, then from the left, then diagonally."""
    len_x, len_y = len(x), len(y)
    rows: dict[int, list[int]] = {}
    if window is None:
        for i in range(len_x):
            rows[i] = list(range(len_y))
    else:
        for i, j in window:
            rows.setdefault(i, []).append(j)
    inf = (math.inf, -1, -1)
    table: dict[tuple[int, int], tuple[float, int, int]] = {(0, 0): (0.0, 0, 0)}
    for i, js in rows.items():
        costs = _cosine_row(x[i], y[np.asarray(js)])
        for j, cost in zip(js, costs.tolist(), strict=True):
            a, b = i + 1, j + 1
            up = table.get((a - 1, b), inf)[0] + cost
            left = table.get((a, b - 1), inf)[0] + cost
            diagonal = table.get((a - 1, b - 1), inf)[0] + cost
            best = (up, a - 1, b)
            if left < best[0]:
                best = (left, a, b - 1)
            if diagonal < best[0]:
                best = (diagonal, a - 1, b - 1)
            table[a, b] = best
    path: list[tuple[int, int]] = []
    i, j = len_x, len_y
    while not i == j == 0:
        path.append((i - 1, j - 1))
        _, i, j = table[i, j]
    path.reverse()
    return table[len_x, len_y][0], path


def _expand_window(
    path: list[tuple[int, int]], len_x: int, len_y: int, radius: int
) -> list[tuple[int, int]]:
    near = set(path)
    for i, j in path:
        for a in range(-radius, radius + 1):
            for b in range(-radius, radius + 1):
                near.add((i + a, j + b))
    cells: set[tuple[int, int]] = set()
    for i, j in near:
        cells.update(
            ((2 * i, 2 * j), (2 * i, 2 * j + 1), (2 * i + 1, 2 * j), (2 * i + 1, 2 * j + 1))
        )
    window: list[tuple[int, int]] = []
    start: int | None = 0
    for i in range(len_x):
        if start is None:
            raise ValueError("FastDTW window has an empty row")
        first: int | None = None
        for j in range(start, len_y):
            if (i, j) in cells:
                window.append((i, j))
                if first is None:
                    first = j
            elif first is not None:
                break
        start = first
    return window


def fastdtw(x: Floats, y: Floats, radius: int = 1) -> tuple[float, list[tuple[int, int]]]:
    """Salvador and Chan's FastDTW with cosine distance, as the ``fastdtw`` package runs it:
    halve both sequences (averaging pairs) until shorter than ``radius + 2``, align, and
    refine within ``radius`` cells of the coarser path."""
    if len(x) < radius + 2 or len(y) < radius + 2:
        return _dtw(x, y, None)
    half_x = (x[0 : len(x) - len(x) % 2 : 2] + x[1 : len(x) - len(x) % 2 : 2]) / 2
    half_y = (y[0 : len(y) - len(y) % 2 : 2] + y[1 : len(y) - len(y) % 2 : 2]) / 2
    _, path = fastdtw(half_x, half_y, radius)
    return _dtw(x, y, _expand_window(path, len(x), len(y), radius))


def _readable(path: str) -> Floats | None:
    try:
        samples = load_audio(path)
    except Exception:  # OSWorld: any file librosa cannot load counts as empty
        return None
    return samples if samples.shape[0] else None


def compare_audios(audio_path_1: Any, audio_path_2: Any, **_: Any) -> float:
    """MFCC + FastDTW similarity of two audio files in [0, 1] (see the module's doc)."""
    if not audio_path_1 or not audio_path_2:
        return 0.0
    first, second = _readable(str(audio_path_1)), _readable(str(audio_path_2))
    if first is None and second is None:
        return 1.0
    if first is None or second is None:
        return 0.0
    try:
        features_1, features_2 = mfcc(first), mfcc(second)
    except Exception:  # OSWorld scores a failed MFCC extraction 0
        return 0.0
    x = np.asarray(_scale_rows(features_1).T, dtype=np.float64)
    y = np.asarray(_scale_rows(features_2).T, dtype=np.float64)
    distance, path = fastdtw(x, y, radius=1)
    normalized = distance / len(path) if path else math.inf
    return float(math.exp(-normalized))


# -- video -------------------------------------------------------------------------------------


def phash(rgb: NDArray[Any], hash_size: int = 8, factor: int = 4) -> NDArray[np.bool_]:
    """imagehash.phash of an RGB frame: grey, 32x32 Lanczos, 2-D DCT-II, the 8x8 lowest
    frequencies above their median."""
    from PIL import Image

    fft = importlib.import_module("scipy.fft")
    size = hash_size * factor
    grey = Image.fromarray(rgb).convert("L").resize((size, size), Image.Resampling.LANCZOS)
    pixels = np.asarray(grey, dtype=np.float64)
    dct = np.asarray(fft.dct(fft.dct(pixels, axis=0), axis=1))
    low = dct[:hash_size, :hash_size]
    bits: NDArray[np.bool_] = low > np.median(low)
    return bits


def compare_videos(
    video_path1: Any, video_path2: Any, max_frames_to_check: int = 100, threshold: int = 5
) -> float:
    """1.0 when the first ``max_frames_to_check`` frames look the same (see the module's doc).
    A file OpenCV cannot open reads as no frames, as in OSWorld."""
    import cv2

    first, second = cv2.VideoCapture(str(video_path1)), cv2.VideoCapture(str(video_path2))
    try:
        checked = mismatches = 0
        while checked < max_frames_to_check:
            ok1, frame1 = first.read()
            ok2, frame2 = second.read()
            if not ok1 or not ok2:
                return 1.0 if ok1 == ok2 else 0.0
            hash1 = phash(cv2.cvtColor(frame1, cv2.COLOR_BGR2RGB))
            hash2 = phash(cv2.cvtColor(frame2, cv2.COLOR_BGR2RGB))
            checked += 1
            if int(np.count_nonzero(hash1 != hash2)) > threshold:
                mismatches += 1
                if mismatches > threshold:
                    return 0.0
        return 1.0
    finally:
        first.release()
        second.release()


# -- tags --------------------------------------------------------------------------------------


def check_mp3_meta(result: Any, meta: Mapping[str, Mapping[str, Any]], **_: Any) -> float:
    """Each ID3 tag named in ``meta`` (mutagen's EasyID3 names: title, artist, ...; several
    values joined by ",", a missing tag is "") matches its ``{"method", "ref"}`` rule. A
    file without an ID3 tag raises, as in OSWorld."""
    from mutagen.easyid3 import EasyID3

    if result is None:
        return 0.0
    tags = EasyID3(str(result))  # type: ignore[no-untyped-call]
    for key, rule in meta.items():
        value: Any = tags.get(key, "")  # type: ignore[no-untyped-call]
        if isinstance(value, list):
            value = ",".join(value)
        if not match_value_to_rule(value, rule):
            return 0.0
    return 1.0
