"""Harvey: a terminal LLM agent with context discipline and an audit trail.

The public, stable surface is re-exported here; the CLI only calls into it.
The re-exports are lazy (PEP 562): ``import harvey`` costs nothing, and each
name imports its module on first use, so ``harvey --help`` does not load the
chunker, the session parser or package metadata it never uses.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvey.analysis.answer import Answer, Citation
    from harvey.analysis.api import AnalyzeOptions, Collaborators, FileAnalysis, analyze_file
    from harvey.analysis.engine import AnalysisResult, ChunkAnalysisParams, run_chunked_analysis
    from harvey.analysis.evidence import Record
    from harvey.analysis.folder_reads import FolderOutcome, analyze_paths
    from harvey.chat.agent import Agent
    from harvey.chat.plan_budget import (
        DYNAMIC_BUDGET,
        HANDOVER_BUDGET,
        contain_tags,
        reduce_plan,
    )
    from harvey.chunks.chunking import Chunk, ChunkConfig, chunk_document
    from harvey.context.budget import estimate_tokens, file_exceeds_budget, remaining_context
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
    from harvey.session.fountain import ParsedSession, Scene, parse_session
    from harvey.workspace.kinds import DocType, detect_doc_type
    from harvey.workspace.paths import safe_path

    __version__: str

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Answer": "harvey.analysis.answer",
    "Citation": "harvey.analysis.answer",
    "Record": "harvey.analysis.evidence",
    "AnalyzeOptions": "harvey.analysis.api",
    "Collaborators": "harvey.analysis.api",
    "FileAnalysis": "harvey.analysis.api",
    "analyze_file": "harvey.analysis.api",
    "FolderOutcome": "harvey.analysis.folder_reads",
    "analyze_paths": "harvey.analysis.folder_reads",
    "AnalysisResult": "harvey.analysis.params",
    "ChunkAnalysisParams": "harvey.analysis.params",
    "run_chunked_analysis": "harvey.analysis.engine",
    "estimate_tokens": "harvey.context.budget",
    "file_exceeds_budget": "harvey.context.budget",
    "remaining_context": "harvey.context.budget",
    "Chunk": "harvey.chunks.chunking",
    "ChunkConfig": "harvey.chunks.chunking",
    "DocType": "harvey.workspace.kinds",
    "chunk_document": "harvey.chunks.chunking",
    "detect_doc_type": "harvey.workspace.kinds",
    "DYNAMIC_BUDGET": "harvey.chat.plan_budget",
    "HANDOVER_BUDGET": "harvey.chat.plan_budget",
    "contain_tags": "harvey.chat.plan_budget",
    "reduce_plan": "harvey.chat.plan_budget",
    "BackendError": "harvey.errors",
    "Cancelled": "harvey.errors",
    "ConfigError": "harvey.errors",
    "HarveyError": "harvey.errors",
    "SessionFileError": "harvey.errors",
    "StoreError": "harvey.errors",
    "ToolError": "harvey.errors",
    "WorkspaceError": "harvey.errors",
    "Message": "harvey.messages",
    "ToolCall": "harvey.messages",
    "ToolResult": "harvey.messages",
    "ParsedSession": "harvey.session.fountain",
    "Scene": "harvey.session.fountain",
    "parse_session": "harvey.session.fountain",
    "safe_path": "harvey.workspace.paths",
    "Agent": "harvey.chat.agent",
    "open_runtime": "harvey.chat.runtime",
    "make_client": "harvey.llm.factory",
}

__all__ = [
    "DYNAMIC_BUDGET",
    "HANDOVER_BUDGET",
    "Agent",
    "AnalysisResult",
    "AnalyzeOptions",
    "Answer",
    "BackendError",
    "Cancelled",
    "Chunk",
    "ChunkAnalysisParams",
    "ChunkConfig",
    "Citation",
    "Collaborators",
    "ConfigError",
    "DocType",
    "FileAnalysis",
    "FolderOutcome",
    "HarveyError",
    "Message",
    "ParsedSession",
    "Record",
    "Scene",
    "SessionFileError",
    "StoreError",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "WorkspaceError",
    "__version__",
    "analyze_file",
    "analyze_paths",
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


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use and keep the value (PEP 562)."""
    if name == "__version__":
        from harvey.version import installed_version

        value: Any = installed_version()
    elif name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'harvey' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
