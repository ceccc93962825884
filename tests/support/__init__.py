"""Test support: real servers, repositories and fakes for the suite."""
