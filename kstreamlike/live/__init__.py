"""Live jobs: a pipeline fed batches as its stream arrives, with checkpoints.

``result.start(checkpoint=...)`` on any pipeline result returns a :class:`Job`; see the
"Running live" guide.
"""

from kstreamlike.live.checkpoint import FORMAT, VERSION
from kstreamlike.live.job import BatchResult, Job, JobMetrics

__all__ = ["FORMAT", "VERSION", "BatchResult", "Job", "JobMetrics"]
