"""The pipeline's stages, one module each: select, embed, score."""
