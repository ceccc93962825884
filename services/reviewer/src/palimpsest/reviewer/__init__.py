"""reviewer"""
