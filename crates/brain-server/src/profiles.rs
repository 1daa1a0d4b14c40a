//! Compatibility profiles (SPEC §2.10): which tool sets `tools/list` offers.
//! `brain` is brain's own; `brain-core` and `aziel` add the seed servers' tools
//! as thin adapters over the same core, store and receipt chain.

/// One tool set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Brain,
    BrainCore,
    Aziel,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::Brain, Profile::BrainCore, Profile::Aziel];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Brain => "brain",
            Self::BrainCore => "brain-core",
            Self::Aziel => "aziel",
        }
    }
}

/// The profiles turned on (`BRAIN_TOOL_PROFILES`), in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profiles {
    on: [bool; 3],
}

impl Default for Profiles {
    fn default() -> Self {
        Self {
            on: [true, false, false],
        }
    }
}

impl Profiles {
    /// Parse a comma-separated list; an unknown or empty name is an error that
    /// says which names exist.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut on = [false; 3];
        for name in list.split(',').map(str::trim) {
            let Some(i) = Profile::ALL.iter().position(|p| p.as_str() == name) else {
                return Err(format!(
                    "BRAIN_TOOL_PROFILES: unknown profile {name:?}; choose from brain, brain-core, aziel (comma-separated)"
                ));
            };
            on[i] = true;
        }
        Ok(Self { on })
    }

    pub fn all() -> Self {
        Self { on: [true; 3] }
    }

    /// `p` alone.
    pub fn only(p: Profile) -> Self {
        let mut on = [false; 3];
        if let Some(i) = Profile::ALL.iter().position(|x| *x == p) {
            on[i] = true;
        }
        Self { on }
    }

    pub fn has(&self, p: Profile) -> bool {
        Profile::ALL
            .iter()
            .position(|x| *x == p)
            .is_some_and(|i| self.on[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_refuse_unknown_names() {
        let p = Profiles::parse("brain, aziel").unwrap();
        assert!(p.has(Profile::Brain) && p.has(Profile::Aziel) && !p.has(Profile::BrainCore));
        assert_eq!(Profiles::default(), Profiles::parse("brain").unwrap());
        let e = Profiles::parse("brain,brian").unwrap_err();
        assert!(e.contains("\"brian\"") && e.contains("brain-core"));
        assert!(Profiles::parse("").is_err());
    }
}
