# gpuop's module logic. Pure functions live here; library/*.py are thin AnsibleModule shells.
