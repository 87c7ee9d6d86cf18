"""Fleet scan analysis (no network): snapshot model, fleet rules and ranking, history, deep-check folding."""
