"""Run `datamask select` on SLURM workers with dask-jobqueue (pip install dask-jobqueue).

    python cluster/slurm.py /shared/corpus /shared/selected --jobs 8 -- --ratio 0.1

Each SLURM job is one Dask worker on one GPU (or CPU node with --cpu). The client (this
script) runs on the login node or in its own small job; input and output must be on a
filesystem the compute nodes share. Adjust queue/account/walltime to your site.
"""

import argparse
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--jobs", type=int, default=4, help="SLURM jobs = Dask workers")
    p.add_argument("--queue", default="gpu")
    p.add_argument("--account", default=None)
    p.add_argument("--walltime", default="04:00:00")
    p.add_argument("--memory", default="64GB", help="host memory per job")
    p.add_argument("--cpu", action="store_true", help="CPU workers (no GPU request, --device cpu)")
    p.add_argument("select_args", nargs=argparse.REMAINDER, help="-- then datamask select flags")
    a = p.parse_args()

    from dask_jobqueue import SLURMCluster
    from distributed import Client

    from datamask.cli import main as datamask

    extra = [] if a.cpu else ["--gres=gpu:1"]
    cluster = SLURMCluster(
        queue=a.queue,
        account=a.account,
        walltime=a.walltime,
        cores=8,
        processes=1,
        memory=a.memory,
        job_extra_directives=extra,
        # one single-threaded worker per job (one partition at a time); GPU jobs pin the GPU
        worker_extra_args=["--nthreads", "1"] + ([] if a.cpu else ["--resources", "GPU=1"]),
        job_script_prologue=["source ~/.bashrc", "conda activate datamask"],
    )
    cluster.scale(jobs=a.jobs)
    client = Client(cluster)
    client.wait_for_workers(1, timeout=1800)  # SLURM queues can be slow
    flags = [f for f in a.select_args if f != "--"]
    device = ["--device", "cpu" if a.cpu else "gpu"]
    rc = datamask(["select", a.input, a.output, "--scheduler", cluster.scheduler_address, *device, *flags])
    client.close()
    cluster.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
