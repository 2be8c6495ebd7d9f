"""The layering and the request pipeline's seams."""
