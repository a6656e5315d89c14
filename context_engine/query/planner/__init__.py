"""The offline planner's steps, in order: collection, linking, conditions, shape, spans (`query.offline` runs them)."""
