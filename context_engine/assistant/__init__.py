"""The graph layer: state, run context, nodes and the builders of the main graph and its structured
subgraph. Everything below it (query, retrievers, answering, store) is plain Python that knows
nothing of LangGraph; nodes here are thin calls into it."""
