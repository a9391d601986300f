"""A real Kubernetes control plane on this machine, with the server registered behind its aggregator: what
``hack/dev-cluster.sh`` brings up for trying and developing, and what the tests in tests/realk8s and
tests/parity start for themselves. One harness for both:

- :mod:`devcluster.controlplane`: etcd and kube-apiserver with the aggregation layer (and its certificates);
- :mod:`devcluster.deployed`: the server run with the Deployment's arguments of an apiservice/ overlay,
  registered through that overlay's APIServices;
- :mod:`devcluster.crds`: CRDs for the KubeVirt kinds the server reads, where ../shared has none;
- :mod:`devcluster.virtapi`: KubeVirt's own virt-api (../shared/oracle) beside the server, behind the same
  kube-apiserver (tests/virtapi, hack/benchmarks/virtapi.py);
- :mod:`devcluster.cli`: ``up``, ``status`` and ``down`` (``python -m devcluster``).

Not part of the installed package (the wheel holds apiserver/ alone): it runs from a checkout.
"""
