"""CLEX (Chen et al., ICLR 2024): RoPE frequencies scaled by a learned neural ODE over the length factor t."""
