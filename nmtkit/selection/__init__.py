"""Data selection: bilingual modified Moore–Lewis (Axelrod et al. 2011) with built-in n-gram LMs."""
