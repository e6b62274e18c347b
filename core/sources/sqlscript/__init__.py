"""Data-only SQL scripts (pg_dump's shapes), read into rows and never executed.

The pipeline, in the order the text goes through it:

- lexer.py: the careful reader, a hand-written lexer and statement scanner (linear time);
- statements.py: what one statement means (rows, a COPY block, or harmless preamble);
- gather.py: whole INSERT statements found in a block of text by quote parity;
- bulk_values.py: many VALUES lists parsed at once, column-wise (polars, Rust regex);
- insert_blocks.py: one table's INSERT statements read block by block;
- copy_blocks.py: where a `COPY ... FROM stdin` block's rows end, and their bytes;
- chunks.py: what reading yields, its tables and its rows chunk by chunk;
- reader.py: one pass over the file, from the pieces above;
- source.py: the Source the load and the window open (SqlScriptSource);
- columns.py: how the script's rows map onto an existing table.
"""
