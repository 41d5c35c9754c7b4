"""Embedders: the in-deployment ONNX model (default) and Amazon Bedrock Titan V2."""
