"""Starting MPI jobs: the launcher that matches the MPI mpi4py loads, and whether we already run under one."""
import os
import shutil
import sys

# Set by mpiexec/mpirun/srun in every rank they start (MPICH hydra, Open MPI, PMIx, Slurm's PMI).
LAUNCH_ENV_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                   "HYDI_CONTROL_FD", "SLURM_PROCID")


def under_launcher():
    return any(v in os.environ for v in LAUNCH_ENV_VARS)


def launcher_rank():
    """This process's rank as its launcher set it (before MPI is started), or None without a launcher."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def mpi_family():
    from pytorch_bridge import mpi

    return mpi.mpi_family()


def launcher(family=None):
    """(command, extra environment) that starts ranks of the MPI mpi4py loads."""
    family = family or mpi_family()
    if family == "openmpi":
        cmd = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_rmaps_base_oversubscribe": "1"}
        return cmd, env
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return (here if os.path.exists(here) else shutil.which("mpiexec.mpich") or shutil.which("mpiexec")), {}


def project_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Python puts the current folder first on sys.path for `python -m` and `python -c` (-P, which does not, needs
# 3.11): a child started in a source checkout would import its unbuilt packages, not the code its parent runs.
_RUN_MODULE = ("import runpy, sys\n"
               "if sys.path and sys.path[0] == '': del sys.path[0]\n"
               "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")


def python_module(module, *args):
    """The argv of `python -m module args...` for a child of ours: this interpreter, and the code this process
    runs (child_env puts it first on PYTHONPATH) wherever the child starts, not the current folder's."""
    return [sys.executable, "-c", _RUN_MODULE, module, *args]


def shown(argv):
    """argv as a line for messages, with python_module's bootstrap written as the `-m` it stands for."""
    argv = list(argv)
    for i in range(len(argv) - 1):
        if argv[i] == "-c" and argv[i + 1] == _RUN_MODULE:
            argv[i:i + 2] = ["-m"]
            break
    return " ".join(argv)


def child_env(**extra):
    """The environment for a child `python -m run...`: ours plus `extra`, this checkout first on PYTHONPATH."""
    return {**os.environ, **extra, "PYTHONPATH": project_root() + os.pathsep + os.environ.get("PYTHONPATH", "")}
