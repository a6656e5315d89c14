"""The offline planner's steps, in order: collection, linking, conditions, facets, shape, spans, then
the context set's templates (`query.offline` runs them)."""
