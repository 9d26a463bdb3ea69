"""Harvey: a terminal LLM agent with context discipline and an audit trail.

The public, stable surface is re-exported here; the CLI only calls into it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("harvey-agent")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

from harvey.agent import Agent
from harvey.context.analysis import AnalysisResult, ChunkAnalysisParams, run_chunked_analysis
from harvey.context.budget import estimate_tokens, file_exceeds_budget, remaining_context
from harvey.context.chunking import Chunk, ChunkConfig, DocType, chunk_document, detect_doc_type
from harvey.context.plan_budget import DYNAMIC_BUDGET, HANDOVER_BUDGET, contain_tags, reduce_plan
from harvey.errors import (
    BackendError,
    Cancelled,
    ConfigError,
    HarveyError,
    SessionFileError,
    StoreError,
    ToolError,
    WorkspaceError,
)
from harvey.llm.factory import make_client
from harvey.messages import Message, ToolCall, ToolResult
from harvey.runtime import open_runtime
from harvey.session.fountain import ParsedSession, Scene, parse_session
from harvey.tools.files import safe_path

__all__ = [
    "DYNAMIC_BUDGET",
    "HANDOVER_BUDGET",
    "Agent",
    "AnalysisResult",
    "BackendError",
    "Cancelled",
    "Chunk",
    "ChunkAnalysisParams",
    "ChunkConfig",
    "ConfigError",
    "DocType",
    "HarveyError",
    "Message",
    "ParsedSession",
    "Scene",
    "SessionFileError",
    "StoreError",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "WorkspaceError",
    "__version__",
    "chunk_document",
    "contain_tags",
    "detect_doc_type",
    "estimate_tokens",
    "file_exceeds_budget",
    "make_client",
    "open_runtime",
    "parse_session",
    "reduce_plan",
    "remaining_context",
    "run_chunked_analysis",
    "safe_path",
]
