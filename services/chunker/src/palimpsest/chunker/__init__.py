"""chunker"""
