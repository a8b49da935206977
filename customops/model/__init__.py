"""Models as data: translation of one node into our domain and back (translate), the model-wide rewrite,
restore and type inference (rewriter), and loading and saving model files safely (io)."""
