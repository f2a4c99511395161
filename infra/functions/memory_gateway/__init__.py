"""The AgentCore Gateway's functions: the REQUEST interceptor (``interceptor.py``) and the Lambda target
(``target.py``) serving the memory tools. Both run on the memory adapter layer."""
