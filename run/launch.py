"""Starting MPI jobs: the launcher that matches the MPI mpi4py loads, and whether we already run under one."""
import os
import shutil
import sys

# Set by mpiexec/mpirun/srun in every rank they start (MPICH hydra, Open MPI, PMIx, Slurm's PMI).
LAUNCH_ENV_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                   "HYDI_CONTROL_FD", "SLURM_PROCID")


def under_launcher():
    return any(v in os.environ for v in LAUNCH_ENV_VARS)


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


def child_env(**extra):
    """The environment for a child `python -m run...`: ours plus `extra`, this checkout first on PYTHONPATH."""
    return {**os.environ, **extra, "PYTHONPATH": project_root() + os.pathsep + os.environ.get("PYTHONPATH", "")}
