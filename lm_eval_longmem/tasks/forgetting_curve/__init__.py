"""The forgetting curve (Liu et al.): copy vs. language-modelling accuracy against length."""
