"""Rendered VirtualMachines as a collection (``expandedvirtualmachines.expand.kubevirt-expand.io``).

The store here keeps one rendering per VM of the cluster source's VM cache, current as the watches
deliver changes, and serves GET expand-spec, list and watch from the same items. See
:mod:`.store` for the design (the dependency index, the event log and the resourceVersions).
"""
