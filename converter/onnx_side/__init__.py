"""The ONNX side: reading a model file, opset and exporter quirks, contrib and QOperator ops."""
