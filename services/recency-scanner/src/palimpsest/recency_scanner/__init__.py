"""recency_scanner"""
