"""The agent runtime: the turn loop over model, tools and hooks, and the Trace it writes.

`Agent(harness, model).run("viewer message")` gives a `Trace`; `run_many` batches episodes.
"""

from .errors import ERROR_KINDS, AgentError
from .loop import Agent, Episode, drive
from .parsing import ParsedOutput, parse_output
from .tool_runner import InlineToolRunner, ThreadToolRunner, ToolRunner
from .trace import SEGMENT_IDS, SEGMENTS, Event, Span, Trace, TrainingView, read_traces, write_traces

__all__ = [
    "ERROR_KINDS", "SEGMENTS", "SEGMENT_IDS", "Agent", "AgentError", "Episode", "Event",
    "InlineToolRunner", "ParsedOutput", "Span", "ThreadToolRunner", "ToolRunner", "Trace",
    "TrainingView", "drive", "parse_output", "read_traces", "write_traces",
]
