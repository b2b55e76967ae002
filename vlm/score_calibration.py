"""Score calibration: temperature and threshold fitted on clips labelled success/failure.

Temperature scaling (Guo et al. 2017) on the score's logit, fitted by minimising the log loss; the
threshold maximises accuracy of the calibrated probability. Reported: ROC AUC (threshold-free ranking
quality, unchanged by temperature), accuracy at the threshold, and expected calibration error (ECE, equal
width bins) before and after. Saved as JSON with the scorer id and prompt hash it belongs to.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vlm.errors import VLMError

_EPS = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels, bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        raise VLMError("AUC needs both successful and failed clips")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores))
    # average ranks over ties (1-based)
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    for start, count in zip(first, counts):
        ranks[order[start : start + count]] = start + (count + 1) / 2
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> float:
    """Sum over equal-width bins of (bin share) * |mean confidence - success rate|."""
    probs, labels = np.asarray(probs, np.float64), np.asarray(labels, np.float64)
    bins = np.minimum((probs * n_bins).astype(int), n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            ece += mask.mean() * abs(probs[mask].mean() - labels[mask].mean())
    return float(ece)


def accuracy(probs: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """Share of clips with (prob >= threshold) == label."""
    return float(np.mean((np.asarray(probs) >= threshold) == np.asarray(labels, bool)))


@dataclass(frozen=True, kw_only=True)
class ScoreCalibration:
    """A fitted calibration and its quality figures; ``apply``/``predict`` use it on new scores."""

    scorer_id: str
    """The scorer whose scores were calibrated."""
    prompt_hash: str
    """Hash of the prompt the scores answered."""
    temperature: float
    """Calibrated probability = sigmoid(logit(score) / temperature)."""
    threshold: float
    """Calibrated probability at or above which a clip counts as a success."""
    auc: float
    """ROC AUC of the scores."""
    accuracy: float
    """Accuracy of the calibrated probability at the threshold."""
    ece: float
    """ECE of the calibrated probabilities."""
    ece_before: float
    """ECE of the raw scores."""
    n_clips: int
    """Labelled clips used."""
    n_bins: int = 10
    """Bins of the ECE."""

    def apply(self, scores: np.ndarray) -> np.ndarray:
        """float32 calibrated probabilities."""
        return _sigmoid(_logit(scores) / self.temperature).astype(np.float32)

    def predict(self, scores: np.ndarray) -> np.ndarray:
        """bool success predictions."""
        return self.apply(scores) >= self.threshold

    def ece_warning(self, path: str | Path) -> str:
        """A warning (empty when none is due) when this calibration made the expected calibration error
        worse on the clips it was fitted on: a temperature fit minimises log loss, not ECE, so this happens
        with few or odd clips. Every verb that applies a calibration prints it."""
        if not self.ece > self.ece_before:
            return ""
        return (
            f"{path} makes the expected calibration error worse on its own clips "
            f"({self.ece_before:.3f} -> {self.ece:.3f}); the calibrated scores may be less "
            "reliable than the raw ones (fit on more, or more varied, episodes)"
        )

    def save(self, path: str | Path) -> Path:
        """Writes JSON; returns the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(dataclasses.asdict(self), indent=2))
        return out

    @classmethod
    def load(cls, path: str | Path) -> ScoreCalibration:
        """Reads a file written by ``save``; one-line VLMError if it is missing or malformed."""
        try:
            data = json.loads(Path(path).read_text())
            return cls(**data)
        except FileNotFoundError:
            raise VLMError(f"no score calibration file at {path}") from None
        except (json.JSONDecodeError, TypeError) as exc:
            raise VLMError(f"{path} is not a score calibration file ({str(exc).splitlines()[0]})") from None


def fit_temperature(scores: np.ndarray, labels: np.ndarray) -> float:
    """Temperature minimising the mean log loss of sigmoid(logit(score) / T), searched on log T."""
    from scipy.optimize import minimize_scalar

    z, y = _logit(scores), np.asarray(labels, np.float64)

    def log_loss(log_t: float) -> float:
        p = np.clip(_sigmoid(z / np.exp(log_t)), 1e-12, 1 - 1e-12)
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))

    result = minimize_scalar(log_loss, bounds=(np.log(1e-2), np.log(1e2)), method="bounded")
    return float(np.exp(result.x))


def best_threshold(probs: np.ndarray, labels: np.ndarray) -> float:
    """The accuracy-maximising threshold, midway between neighbouring distinct probabilities."""
    values = np.unique(np.asarray(probs, np.float64))
    candidates = np.concatenate([[0.0], (values[:-1] + values[1:]) / 2, [np.nextafter(values[-1], 2.0)]])
    accuracies = [accuracy(probs, labels, t) for t in candidates]
    best = np.flatnonzero(np.isclose(accuracies, max(accuracies)))
    # Among equally accurate thresholds prefer the one nearest 0.5 (least surprising).
    return float(candidates[best[np.argmin(np.abs(candidates[best] - 0.5))]])


def fit_calibration(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    scorer_id: str,
    prompt_hash: str = "",
    n_bins: int = 10,
) -> ScoreCalibration:
    """Fits temperature and threshold on scores of clips labelled success (True) / failure (False)."""
    scores = np.asarray(scores, np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if scores.shape != labels.shape:
        raise VLMError(f"{len(scores)} scores but {len(labels)} labels")
    if not np.all(np.isfinite(scores)) or np.any((scores < 0) | (scores > 1)):
        raise VLMError("scores to calibrate must be finite and in [0, 1]")
    labels = labels.astype(bool)
    auc = roc_auc(scores, labels)
    temperature = fit_temperature(scores, labels)
    calibrated = _sigmoid(_logit(scores) / temperature)
    threshold = best_threshold(calibrated, labels)
    return ScoreCalibration(
        scorer_id=scorer_id,
        prompt_hash=prompt_hash,
        temperature=temperature,
        threshold=threshold,
        auc=auc,
        accuracy=accuracy(calibrated, labels, threshold),
        ece=expected_calibration_error(calibrated, labels, n_bins),
        ece_before=expected_calibration_error(scores, labels, n_bins),
        n_clips=len(scores),
        n_bins=n_bins,
    )
