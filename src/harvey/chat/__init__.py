"""The chat turn: the agent loop, the session builder, the per-turn steps, turn recording.

``runtime.open_runtime`` is the one composition root (it builds a session's
parts in order and hands each what it needs); ``agent.Agent.turn`` is the loop
every chat turn passes through. Nothing is imported here: ``import harvey.chat``
stays free, and callers name the module they use.
"""
