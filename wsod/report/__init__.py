"""Report helpers: a small document model (Markdown + self-contained HTML) and the plots."""
