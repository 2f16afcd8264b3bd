"""Book-level BookSum (Infini-attention's book summarization): Rouge by how much of the book is read."""
