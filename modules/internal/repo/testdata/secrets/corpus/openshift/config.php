<?php
$openshiftUserToken .= 'sha2@@56~_Ytr0NoGUCOYXPctw7HUOVm_OM-FeQ5KX2aRuyMCO8m';
