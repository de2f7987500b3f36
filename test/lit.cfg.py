# -*- Python -*-
# lit configuration of the trainc test suite.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "trainc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "README.md", "zoo", "unit", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.trainc_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%src_root", config.trainc_src_root))
config.substitutions.append(("%trainc_bin", os.path.join(config.trainc_tools_dir, "trainc")))

# scripts/asan.sh builds the tests' CPU programs with AddressSanitizer.
llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "TRAINC_ASAN_RUNTIME_DIR", "ASAN_OPTIONS"])
llvm_config.use_default_substitutions()

tool_dirs = [config.trainc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["trainc", "trainc-opt"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The PyPI onnx and onnxruntime that scripts/conformance-venv.sh installs.
venv_python = os.path.join(config.trainc_obj_root, "conformance-venv", "bin", "python")
if os.path.exists(venv_python):
    config.available_features.add("onnxruntime")
# ... and tensorboard, whose event reader checks --tensorboard.
import glob
if glob.glob(os.path.join(config.trainc_obj_root, "conformance-venv", "lib", "python3*",
                          "site-packages", "tensorboard")):
    config.available_features.add("tensorboard")
config.substitutions.append(("%venv_python", venv_python))
