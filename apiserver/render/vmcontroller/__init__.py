"""KubeVirt's VM controller (``pkg/virt-controller/watch/vm``) at d923fdb, pure: what it does with a VM.

The modules here mirror the parts of virt-controller's VM controller that build the VMI a started VM
runs as (:mod:`.startvmi`, for its virt-launcher pod's resources: ``apiserver.render.launcher``) and that
decide what happens to a running VM when its spec changes: whether the change is applied live or needs a restart
(``RestartRequired``), and which patches KubeVirt writes to the running VMI. Each module's docstring
names the KubeVirt file and functions it follows.

======================================================  ==================================================
KubeVirt (package: function)                            here
======================================================  ==================================================
watch/vm: ``startVMI``, ``SetupVMIFromVM``              :mod:`.startvmi`
watch/vm: ``sync`` (the RestartRequired slice)          :func:`.sync.sync_pass`
watch/vm: ``syncRestartRequired``, ``setRestartRequired`` :func:`.restartrequired.sync_restart_required`
watch/vm: ``validLiveUpdateVolumes``/``...Disks``       :mod:`.livevolumes`
watch/vm: ``handleCPUChangeRequest`` (+ ``VMICPUsPatch``) :func:`.hotplug.handle_cpu_change`
watch/vm: ``handleAffinityChangeRequest``               :func:`.hotplug.handle_affinity_change`
watch/vm: ``handleTolerationsChangeRequest``            :func:`.hotplug.handle_tolerations_change`
watch/vm: ``handleMemoryHotplugRequest``                :func:`.hotplug.handle_memory_hotplug`
watch/vm: ``handleVolumeRequests``                      :func:`.sync.handle_volume_requests`
watch/vm: ``handleVolumeUpdateRequest`` (+ volume-migration) :func:`.volumemigration.handle_volume_update_request`
watch/vm: ``handleWaitAsReceiverVolumeInfo``           :func:`.volumemigration.handle_wait_as_receiver_volume_info`
watch/vm: ``Execute`` re-run on its own patches        :func:`.reconcile.settle`
virt-api VM mutator: ``/spec`` as Go encodes it        :func:`.preview.as_admitted`
watch/vm: ``patchVMRevision``, ``getVMRevisionName``    :mod:`.revision`
watch/vm (firmware.go): ``FirmwareController.Sync``     :func:`.firmware.sync_firmware`
network/vmliveupdate: ``IsRestartRequired``             :func:`.network.is_restart_required`
network/controllers: ``VMController.Sync``              :func:`.network.sync_interfaces`
instancetype/apply: ``vmApplier.ApplyToVM``             :func:`.instancetype.apply_to_vm`
instancetype/controller/vm: ``checkResourcesExist``     :func:`.instancetype.check_resources_exist`
======================================================  ==================================================

:mod:`.preview` puts them together for a caller: the rendered difference between the VM as it runs
and as proposed, and KubeVirt's verdict; :mod:`.drift` asks it, for a VM whose captured revisions are
stale, what taking the latest would do.
"""
