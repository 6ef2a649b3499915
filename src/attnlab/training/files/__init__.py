"""How training keeps its files safe, apart from the science of training: one trainer per folder
(folder_lock), a full disk said as such (disk_full), bundles written whole or not at all (bundle_writer),
resumable checkpoints (checkpoint), a pack's finished bundles kept until it ends (finished), what killed runs
left tidied away (leftovers) and a job's log held for its whole run (job_log).

None of them imports the model or a training step: they read and write files (numpy arrays and Orbax
checkpoints among them) for the trainer (attnlab.training.train, .pack) and its command lines.
"""
