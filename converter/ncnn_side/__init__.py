"""The ncnn side: layer specs, Mat axes, size expressions, .param/.bin writing and reading, the real runtime."""
