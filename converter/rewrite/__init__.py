"""What passes share: matching helpers, folding one node, splicing subgraphs, probing attention at run-time sizes."""
